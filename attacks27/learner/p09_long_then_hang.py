# A long loop of barriers (a "sync every step" debug flag left on); near the end rank 1 hits a slow data shard
# and blocks for good (here: sleeps past the deadline) before barrier number `stop`.
import sys
import time

import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    steps, stop = int(sys.argv[1]), int(sys.argv[2])
    for step in range(steps):
        if rank == 1 and step == stop:
            time.sleep(3600)  # line 15: the slow shard
        dist.barrier()  # line 16
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
