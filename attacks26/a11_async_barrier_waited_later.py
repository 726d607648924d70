"""dist.barrier(async_op=True) waited later. good1: rank 0 writes then issues the barrier and waits; the others issue
it, do other work, wait, then read -> no race.  good2: the others poll work.is_completed() instead of wait() -> a
completed barrier orders the same: no race.  bad: the others read after issuing the barrier but before wait() -> race."""

import sys

import _h


def good1(d):
    import os
    import time

    import torch.distributed as dist

    p = os.path.join(d, "x.txt")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        open(p, "w").write("hello")
    w = dist.barrier(async_op=True)
    sum(range(10000))
    w.wait()
    return open(p).read()


def good2(d):
    import os
    import time

    import torch.distributed as dist

    p = os.path.join(d, "x.txt")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        open(p, "w").write("hello")
    w = dist.barrier(async_op=True)
    while not w.is_completed():
        time.sleep(0.001)
    v = open(p).read()
    dist.barrier()
    return v


def bad(d):
    import os
    import time

    import torch.distributed as dist

    p = os.path.join(d, "x.txt")
    if dist.get_rank() == 0:
        time.sleep(0.3)
        open(p, "w").write("hello")
    w = dist.barrier(async_op=True)
    try:
        v = open(p).read()
    except FileNotFoundError:
        v = "missing"
    w.wait()
    return v


sys.exit(
    _h.judge(
        [
            ("wait-then-read", good1, False, {}),
            ("is_completed-polled", good2, False, {}),
            ("read-before-wait", bad, True, {}),
        ]
    )
)
