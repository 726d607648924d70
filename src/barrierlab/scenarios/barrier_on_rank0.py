"""A barrier under `if rank == 0`: only rank 0 reaches it, so it waits for peers that never come."""

import torch.distributed as dist

from barrierlab.scenarios import torchrun_main


def scenario():
    rank = dist.get_rank()
    if rank == 0:
        print("rank 0: preparing the dataset, then waiting for everyone")
        dist.barrier()  # only rank 0 gets here
    return rank


if __name__ == "__main__":
    torchrun_main(scenario)
