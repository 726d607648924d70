"""An extra barrier on rank 0 only: it silently pairs with the other ranks' next barrier, and the job fails later."""

import os
import tempfile
import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def scenario(steps=3, out_dir=None):
    rank = dist.get_rank()
    out_dir = out_dir or os.path.join(tempfile.gettempdir(), "barrierlab-extra-barrier")
    if rank == 0:
        os.makedirs(out_dir, exist_ok=True)
        dist.barrier()  # meant as "the directory exists now", but only rank 0 calls it
    for step in range(steps):
        with span(f"step {step}"):
            time.sleep(0.05)  # stands in for a training step
        dist.barrier()  # end of the step: every rank calls this one
    return steps


if __name__ == "__main__":
    torchrun_main(scenario)
