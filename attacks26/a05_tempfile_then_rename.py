"""tempfile.mkstemp in the folder, then os.rename to a part file, per rank; rank 0 gathers the parts.
good1: barrier, then glob -> no race.  good2: no barrier; rank 0 polls glob('part*') until all 4 parts are there
(each published by a rename, found) -> no race.  bad: rank 0 polls until os.listdir shows 4 entries (the
mkstemp files count too), then reads glob('part*') -> it may miss parts renamed later: race."""

import sys

import _h


def _publish(d, rank, slow):
    import os
    import tempfile
    import time

    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(f"rank{rank}" * 100)
        f.flush()
        time.sleep(slow)
    os.rename(tmp, os.path.join(d, f"part{rank}"))


def _gather(d):
    import glob

    return sorted((p[-5:], len(open(p).read())) for p in glob.glob(d + "/part*"))


def good1(d):
    import torch.distributed as dist

    _publish(d, dist.get_rank(), 0.1)
    dist.barrier()
    return _gather(d) if dist.get_rank() == 0 else None


def good2(d):
    import glob
    import time

    import torch.distributed as dist

    r = dist.get_rank()
    _publish(d, r, 0.1 * r)
    v = None
    if r == 0:
        while len(glob.glob(d + "/part*")) < dist.get_world_size():
            time.sleep(0.002)
        v = _gather(d)
    dist.barrier()
    return v


def bad(d):
    import os
    import time

    import torch.distributed as dist

    r = dist.get_rank()
    _publish(d, r, 0.0 if r == 0 else 0.4)
    v = None
    if r == 0:
        while len(os.listdir(d)) < dist.get_world_size():
            time.sleep(0.002)
        v = _gather(d)
    dist.barrier()
    return v


sys.exit(
    _h.judge(
        [
            ("barrier-then-glob", good1, False, {}),
            ("glob-poll-renamed-parts", good2, False, {}),
            ("listdir-count-includes-tmp", bad, True, {}),
        ]
    )
)
