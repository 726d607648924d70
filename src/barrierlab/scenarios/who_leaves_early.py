"""One rank is late; every rank calls the same collective. Which ranks leave it before the late rank arrives?

``op``: "barrier", "all_reduce", "all_gather", "broadcast" (from rank 0) or "all_reduce(async_op=True)"
(the call returns a handle at once; ``wait()`` on it comes after ``busy`` seconds of other work); also
"gather" (to rank 0) and "scatter" (from rank 0), which are not part of notebook 00's prediction (``OPS``).
"""

import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main

OPS = ("barrier", "all_reduce", "all_gather", "broadcast", "all_reduce(async_op=True)")
ROOTED_OPS = ("broadcast", "gather", "scatter")  # rank 0 is the root
ALL_OPS = OPS + ROOTED_OPS[1:]


def scenario(op="barrier", late_rank=3, late_by=0.4, busy=0.6):
    if op not in ALL_OPS:
        raise ValueError(f"op must be one of {', '.join(map(repr, ALL_OPS))}, not {op!r}")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == late_rank:
        with span("late"):
            time.sleep(late_by)  # this rank is still busy elsewhere
    t = torch.ones(1)
    if op == "barrier":
        dist.barrier()
    elif op == "all_reduce":
        dist.all_reduce(t)  # blocking: returns once every rank's value is in the sum
    elif op == "all_gather":
        dist.all_gather([torch.zeros(1) for _ in range(world_size)], t)
    elif op == "broadcast":
        dist.broadcast(t, src=0)  # every rank needs rank 0's value; rank 0 waits for its direct children
    elif op == "gather":
        dist.gather(t, [torch.zeros(1) for _ in range(world_size)] if rank == 0 else None, dst=0)
    elif op == "scatter":
        dist.scatter(t, [torch.full((1,), float(r)) for r in range(world_size)] if rank == 0 else None, src=0)
    else:
        work = dist.all_reduce(t, async_op=True)  # returns at once with a handle
        with span("other work"):
            time.sleep(busy)  # nothing here is ordered after the late rank's arrival
        work.wait()
    return t.item()


def left_early(run, late_rank=3):
    """The ranks whose call returned before ``late_rank`` entered it (for async_op: the call, not the wait)."""
    calls = {r.rank: next(e for e in r.events if e.is_collective) for r in run}
    arrived = calls[late_rank].start
    return {rank for rank, call in calls.items() if call.end is not None and call.end < arrived}


if __name__ == "__main__":
    torchrun_main(scenario)
