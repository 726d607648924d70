"""An early `return` on some ranks before a barrier: ranks with no work leave, the others wait for them."""

import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def scenario(num_files=2):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    files = [f"part-{i}.csv" for i in range(num_files)]
    my_files = files[rank::world_size]  # 2 files on 4 ranks: ranks 2 and 3 get none
    if not my_files:
        print(f"rank {rank}: no files for me, nothing to do")
        return 0  # leaves before the barrier below
    with span("convert"):
        time.sleep(0.1 * len(my_files))  # stands in for converting the files
    dist.barrier()  # "wait until every shard is converted"
    return len(my_files)


if __name__ == "__main__":
    torchrun_main(scenario)
