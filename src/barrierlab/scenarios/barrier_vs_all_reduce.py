"""A barrier on rank 0 while the other ranks all_reduce: gloo never matches them, every rank waits the timeout."""

import torch
import torch.distributed as dist

from barrierlab.scenarios import torchrun_main


def scenario():
    rank = dist.get_rank()
    loss = torch.tensor([float(rank)])
    if rank == 0:
        print("rank 0: writing the log, then waiting for everyone")
        dist.barrier()
    else:
        dist.all_reduce(loss)  # "average the loss" -- but rank 0 never joins
    return loss.item()


if __name__ == "__main__":
    torchrun_main(scenario)
