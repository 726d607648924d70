"""What a collective orders: every rank writes its shard, meets in one collective, then rank 0 reads every shard.

Rank ``late_rank`` writes ``late`` seconds late. A rank leaves a blocking collective only when it has what it
needs: for barrier and all_reduce that is something from every rank, so rank 0 reads after every write; for
broadcast from rank 0 it is its direct children in gloo's tree having received (ranks 1 and 2 of 4), so rank 0
can leave before a late rank 3 arrives; with ``async_op=True`` the call returns at once and nothing is ordered until
``wait()``.
"""

import os
import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main

OPS = ("barrier", "all_reduce", "broadcast", "all_reduce(async_op=True)", "all_reduce(async_op=True) + wait()")


def meet(op):
    """Call the collective named ``op``; return its Work if it was issued with async_op=True and not waited on."""
    value = torch.ones(1)
    if op == "barrier":
        dist.barrier()
    elif op == "all_reduce":
        dist.all_reduce(value)
    elif op == "broadcast":
        dist.broadcast(value, src=0)
    elif op == "all_reduce(async_op=True)":
        return dist.all_reduce(value, async_op=True)  # returns once issued: the peers may not have arrived
    elif op == "all_reduce(async_op=True) + wait()":
        dist.all_reduce(value, async_op=True).wait()
    else:
        raise ValueError(f"op must be one of {', '.join(OPS)}, not {op!r}")
    return None


def scenario(op="all_reduce", folder=None, late_rank=3, late=0.3):
    """Every rank writes shard-<rank>.txt (``late_rank`` ``late`` s late), calls ``op``, and rank 0 looks for
    the late rank's shard. Returns (rank 0: did it see that shard, else None; seconds until this rank left ``op``)."""
    rank = dist.get_rank()
    folder = shared_folder(folder)
    start = time.monotonic()
    with span("write shard", kind="io"):
        time.sleep(late if rank == late_rank else 0.0)
        with open(os.path.join(folder, f"shard-{rank}.txt"), "w") as f:
            f.write(f"{rank}\n")
    work = meet(op)
    left = time.monotonic() - start
    seen = None
    if rank == 0:
        with span("read shards", kind="io"):
            seen = os.path.exists(os.path.join(folder, f"shard-{late_rank}.txt"))
    if work is not None:
        work.wait()  # the async call must be waited on before the rank exits
    return seen, round(left, 3)


if __name__ == "__main__":
    torchrun_main(scenario)
