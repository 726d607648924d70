# Each rank lists the pair's members itself first (a "leader first" convention), and keeps torch from sorting
# them so that group rank 0 is the rank itself (sort_ranks=False, torch 2.13's new_group).
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    pair = [rank, rank ^ 1]  # rank 0: [0, 1], rank 1: [1, 0], ...
    groups = {}
    for first in (0, 2):
        members = [first, first + 1] if rank in (first, first + 1) else [first, first + 1]
        if rank in members:
            members = pair
        groups[first] = dist.new_group(members, sort_ranks="sorted" in sys.argv)
    mine = groups[rank - rank % 2]
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=mine)
    print("sum", t.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
