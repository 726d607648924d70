# The tutorial's launcher: mp.spawn of demo_basic (which sets up its own group).
import os

import torch.distributed as dist
import torch.multiprocessing as mp


def demo_basic(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    dist.barrier()
    print("spawned rank", rank, "passed")
    dist.destroy_process_group()


def main():
    mp.spawn(demo_basic, args=(2,), nprocs=2, join=True)


if __name__ == "__main__":
    main()
