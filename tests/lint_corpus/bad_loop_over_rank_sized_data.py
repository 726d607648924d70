# The twin of good_loop_over_rank_seeded_data_of_fixed_length: here the rank decides how many rows or batches
# there are (a shard sized by the rank, a builder that loops rank + 1 times), so ranks run the DDP forward and
# backward a different number of times and the extra calls have no partner (the uneven-inputs case of torch's
# Join tutorial). Written here.
# expect: 27 rank-dependent-loop model() (DDP forward)
# expect: 27 rank-dependent-loop model(x[i]).sum().backward() (DDP backward)
# expect: 29 rank-dependent-loop model() (DDP forward)
# expect: 29 rank-dependent-loop model(inputs).sum().backward() (DDP backward)
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def make_batches(rank):
    g = torch.Generator().manual_seed(30 + rank)
    batches = []
    for step in range(rank + 1):
        batches.append(torch.randn(8, 6, generator=g))
    return batches


def train():
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(6, 3))
    x = torch.randn(4 + rank, 8, 6)
    for i in range(len(x)):
        model(x[i]).sum().backward()
    for inputs in make_batches(rank):
        model(inputs).sum().backward()
