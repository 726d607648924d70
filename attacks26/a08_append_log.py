"""open(..., 'a') logs. good: every rank appends lines, barrier, rank 0 reads the log -> no race.
bad: rank 0 reads the log right away while the others append after a sleep -> it misses their lines: race."""

import sys

import _h


def _append(d, r):
    import os

    with open(os.path.join(d, "train.log"), "a") as f:
        f.write(f"rank {r} step 1\n")


def good(d):
    import os

    import torch.distributed as dist

    r = dist.get_rank()
    _append(d, r)
    dist.barrier()
    return len(open(os.path.join(d, "train.log")).readlines()) if r == 0 else None


def bad(d):
    import os
    import time

    import torch.distributed as dist

    r = dist.get_rank()
    if r == 0:
        _append(d, r)
        time.sleep(0.1)
        v = len(open(os.path.join(d, "train.log")).readlines())
    else:
        time.sleep(0.4)
        _append(d, r)
        v = None
    dist.barrier()
    return v


sys.exit(_h.judge([("append-barrier-read", good, False, {}), ("read-while-others-append", bad, True, {})]))
