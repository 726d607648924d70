"""shutil.rmtree of a checkpoint folder. good: rank 0 writes ckpt/, barrier, all read, barrier, rank 0 rmtree.
bad: rank 0 rmtree's right after the first barrier while the others read after a sleep -> race (they find nothing)."""

import sys

import _h


def _make(d):
    import os

    os.makedirs(os.path.join(d, "ckpt-1"))
    for i in range(3):
        with open(os.path.join(d, "ckpt-1", f"shard{i}.bin"), "wb") as f:
            f.write(b"x" * 100)


def _read(d):
    import os

    try:
        return sum(
            len(open(os.path.join(d, "ckpt-1", n), "rb").read()) for n in sorted(os.listdir(os.path.join(d, "ckpt-1")))
        )
    except FileNotFoundError:
        return "gone"


def good(d):
    import os
    import shutil

    import torch.distributed as dist

    if dist.get_rank() == 0:
        _make(d)
    dist.barrier()
    v = _read(d)
    dist.barrier()
    if dist.get_rank() == 0:
        shutil.rmtree(os.path.join(d, "ckpt-1"))
    return v


def bad(d):
    import os
    import shutil
    import time

    import torch.distributed as dist

    if dist.get_rank() == 0:
        _make(d)
    dist.barrier()
    if dist.get_rank() == 0:
        shutil.rmtree(os.path.join(d, "ckpt-1"))
        v = "removed"
    else:
        time.sleep(0.3)
        v = _read(d)
    dist.barrier()
    return v


sys.exit(_h.judge([("read-barrier-rmtree", good, False, {}), ("rmtree-while-others-read", bad, True, {})]))
