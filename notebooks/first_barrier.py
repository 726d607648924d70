"""Notebook 00's first example without barrierlab: four ranks with different amounts of work meet at a barrier.

torchrun --standalone --nproc-per-node 4 first_barrier.py
"""

import time

import torch.distributed as dist


def main():
    dist.init_process_group(backend="gloo")  # torchrun set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank = dist.get_rank()
    start = time.time()
    time.sleep((0.2, 0.5, 0.1, 0.35)[rank % 4])  # each rank has a different amount of work
    arrived = time.time() - start
    dist.barrier()  # no rank leaves until every rank of the group has entered
    print(f"rank {rank}: arrived after {arrived:.2f} s, left after {time.time() - start:.2f} s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
