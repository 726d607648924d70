# The same per-rank table, but rank 1's row has 3 steps: it all-reduces once less, and rank 0's fourth call waits
# until the timeout. Written here, beside good_per_rank_table_of_equal_rows.py.
# expect: 14 rank-dependent-loop dist.all_reduce
import torch
import torch.distributed as dist

REQUESTS = {0: (12, 20, 9, 30), 1: (14, 11, 28)}


def serve():
    rank = dist.get_rank()
    for tokens in REQUESTS[rank]:
        timing = torch.tensor([float(tokens)])
        dist.all_reduce(timing)
