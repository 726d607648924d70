# A long training loop that all-reduces a metric each step; at one step in the middle, rank 1 takes the "max"
# branch of a logging helper (its own flag) while the others sum.
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    steps = int(sys.argv[1])
    odd = int(sys.argv[2])
    for step in range(steps):
        t = torch.ones(1)
        op = dist.ReduceOp.MAX if (rank == 1 and step == odd) else dist.ReduceOp.SUM
        dist.all_reduce(t, op=op)  # line 17
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
