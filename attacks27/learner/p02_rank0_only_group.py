# Rank 0 alone keeps a one-member group for its logging; every rank then makes a gloo group of all ranks for
# CPU-side metadata (as trainers do next to an NCCL default group).
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        log_group = dist.new_group([0])  # only rank 0 logs
        dist.barrier(group=log_group)
    cpu_group = dist.new_group(backend="gloo")
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=cpu_group)
    print("sum", t.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
