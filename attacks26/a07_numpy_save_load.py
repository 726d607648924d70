"""np.save / np.load. good: rank 0 np.save, barrier, others np.load -> no race.
bad (mmap): rank 1 np.load(mmap_mode='r') before a barrier, rank 0 np.save's new values into the same path after it,
rank 1 reads the array after a sleep -> it sees rank 0's new values: its read (through the mapping) and rank 0's write
come after the barrier, unordered: race."""

import sys

import _h


def good(d):
    import os
    import time

    import numpy as np
    import torch.distributed as dist

    p = os.path.join(d, "emb.npy")
    if dist.get_rank() == 0:
        time.sleep(0.2)
        np.save(p, np.arange(1000.0))
    dist.barrier()
    return float(np.load(p).sum())


def bad(d):
    import os
    import time

    import numpy as np
    import torch.distributed as dist

    p = os.path.join(d, "emb.npy")
    if dist.get_rank() == 0:
        np.save(p, np.zeros(4096))
    dist.barrier()
    arr = np.load(p, mmap_mode="r") if dist.get_rank() == 1 else None
    dist.barrier()
    if dist.get_rank() == 0:
        np.save(p, np.ones(4096))  # same size: the mapping stays valid
        v = "rewrote"
    else:
        time.sleep(0.5)
        v = float(arr.sum())  # 4096.0: rank 0's new values
    dist.barrier()
    return v


sys.exit(_h.judge([("save-barrier-load", good, False, {}), ("mmap-load-then-rewrite", bad, True, {"world": 2})]))
