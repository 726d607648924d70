"""A marker file polled in a loop. good1: rank 0 writes data, then an empty DONE; others poll exists(DONE), read data
-> no race.  good2: the marker carries a word: rank 0 writes data, then Path(m).write_text('ok'); the others poll
`Path(m).read_text() == 'ok'` (a FileNotFoundError or an empty read means not yet) -> correct, no race on the data.
bad: rank 0 writes the marker before it finishes the data -> the others read partial data: race."""

import sys

import _h


def _data(d, slow):
    import os
    import time

    with open(os.path.join(d, "data.txt"), "w") as f:
        f.write("x" * 1000)
        f.flush()
        time.sleep(slow)
        f.write("y" * 1000)


def good1(d):
    import os
    import time

    import torch.distributed as dist

    m = os.path.join(d, "DONE")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        _data(d, 0.1)
        open(m, "w").close()
        v = "made"
    else:
        while not os.path.exists(m):
            time.sleep(0.002)
        v = len(open(os.path.join(d, "data.txt")).read())
    dist.barrier()
    return v


def good2(d):
    import os
    import time
    from pathlib import Path

    import torch.distributed as dist

    m = Path(d) / "READY"
    if dist.get_rank() == 0:
        time.sleep(0.2)
        _data(d, 0.1)
        m.write_text("ok")
        v = "made"
    else:
        while True:
            try:
                if m.read_text() == "ok":
                    break
            except FileNotFoundError:
                pass
            time.sleep(0.002)
        v = len(open(os.path.join(d, "data.txt")).read())
    dist.barrier()
    return v


def bad(d):
    import os
    import time

    import torch.distributed as dist

    m = os.path.join(d, "DONE")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        open(m, "w").close()
        _data(d, 0.3)
        v = "made"
    else:
        while not os.path.exists(m):
            time.sleep(0.002)
        time.sleep(0.05)
        v = len(open(os.path.join(d, "data.txt")).read())
    dist.barrier()
    return v


if __name__ == "__main__":
    sys.exit(
        _h.judge(
            [
                ("empty-DONE-polled", good1, False, {}),
                ("content-marker-read-polled", good2, False, {}),
                ("marker-before-data", bad, True, {}),
            ]
        )
    )
