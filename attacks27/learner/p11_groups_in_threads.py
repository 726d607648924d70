# Group creation is slow on big jobs, so this script makes its data-parallel groups in a thread pool, one
# new_group per thread; every rank makes every group (members or not), as torch asks.
import time
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.distributed as dist


def make(members):
    time.sleep(0.05 * ((dist.get_rank() + members[0] // 2) % 2))  # stands in for uneven per-group setup work
    return members, dist.new_group(members)  # line 12


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    with ThreadPoolExecutor(2) as pool:
        groups = dict((tuple(m), g) for m, g in pool.map(make, [[0, 1], [2, 3]]))
    mine = groups[(0, 1)] if rank < 2 else groups[(2, 3)]
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=mine)  # line 22
    print("sum", t.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
