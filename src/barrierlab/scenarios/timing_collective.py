"""Timing an all_reduce: unless the ranks start the clock together, a straggler's lateness counts as communication."""

import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def scenario(align=False, steps=3, slow_rank=2, late=0.2, numel=2**18):
    """Each step: compute (``late`` seconds on ``slow_rank``, 20 ms elsewhere), then a timed all_reduce.

    ``align=True`` is the honest recipe: a barrier before the clock starts, and the time reported is the
    maximum over ranks (a collective is finished when its last rank is).
    Returns this rank's own measurements and the per-step maximum over all ranks.
    """
    rank = dist.get_rank()
    grads = torch.ones(numel)  # 1 MiB of float32 "gradients"
    mine = []
    for _ in range(steps):
        with span("compute"):
            time.sleep(late if rank == slow_rank else 0.02)
        if align:
            dist.barrier()  # everyone starts the clock at the same moment
        with span("timed", "other"):  # what the clock measures
            start = time.perf_counter()
            dist.all_reduce(grads)
            mine.append(time.perf_counter() - start)
    worst = torch.tensor(mine, dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    return {"mine": mine, "max": worst.tolist()}


if __name__ == "__main__":
    torchrun_main(scenario)
