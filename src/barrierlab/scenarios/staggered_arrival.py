"""Ranks reach a barrier at different times and leave it together: the definition of a barrier."""

import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def scenario(work_seconds=(0.2, 0.5, 0.1, 0.35)):
    rank = dist.get_rank()
    with span("work"):
        time.sleep(work_seconds[rank % len(work_seconds)])  # each rank has a different amount to do
    dist.barrier()  # no rank leaves until every rank of the group has entered
    return rank


if __name__ == "__main__":
    torchrun_main(scenario)
