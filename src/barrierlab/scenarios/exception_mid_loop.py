"""An exception on one rank in the middle of a training loop: the others wait for it at the next collective."""

import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def load_batch(rank, step, bad_rank, bad_step):
    if rank == bad_rank and step == bad_step:
        raise ValueError(f"corrupt record in batch {step} of rank {rank}")
    return torch.full((4,), float(step))


def scenario(steps=4, bad_rank=1, bad_step=2):
    rank = dist.get_rank()
    for step in range(steps):
        with span("step"):
            batch = load_batch(rank, step, bad_rank, bad_step)
            time.sleep(0.05)
            grad = batch.mean().reshape(1)
        dist.all_reduce(grad)  # average the gradient
    return steps


if __name__ == "__main__":
    torchrun_main(scenario)
