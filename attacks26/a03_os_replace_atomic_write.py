"""os.replace for atomic writes. good: rank 0 writes tmp (in two parts), os.replace into place; others poll
exists(final) and read -> no race (published by a rename).  bad: rank 0 writes final directly in two parts; others
poll exists(final) and read -> a partial read: race."""

import sys

import _h


def _write(path, slow):
    import time

    with open(path, "w") as f:
        f.write("A" * 5000)
        f.flush()
        time.sleep(slow)
        f.write("B" * 5000)


def good(d):
    import os
    import time

    import torch.distributed as dist

    final = os.path.join(d, "state.json")
    if dist.get_rank() == 0:
        _write(final + ".tmp", 0.3)
        os.replace(final + ".tmp", final)
        v = "wrote"
    else:
        while not os.path.exists(final):
            time.sleep(0.002)
        v = len(open(final).read())
    dist.barrier()
    return v


def bad(d):
    import os
    import time

    import torch.distributed as dist

    final = os.path.join(d, "state.json")
    if dist.get_rank() == 0:
        _write(final, 0.3)
        v = "wrote"
    else:
        while not os.path.exists(final):
            time.sleep(0.002)
        v = len(open(final).read())
    dist.barrier()
    return v


sys.exit(_h.judge([("tmp-then-os.replace", good, False, {}), ("write-in-place-polled", bad, True, {})]))
