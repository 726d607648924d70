# Each rank draws its own data from a generator seeded with its rank (the per-rank seeding of open_clip's
# random_seed(seed, rank) and of the PyTorch distributed tutorial's partitioned data), but the number of rows
# or batches is fixed in the code: every rank runs the loop as often, so the DDP forward and backward in it pair.
# The seed changes what the tensors hold, not how many there are. Written here.
# expect: none
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 6


def make_batches(rank):
    g = torch.Generator().manual_seed(30 + rank)
    batches = []
    for step in range(STEPS):
        batches.append((torch.randn(8, 6, generator=g), torch.randint(0, 3, (8,), generator=g)))
    return batches


def train():
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(6, 3))
    g = torch.Generator().manual_seed(40 + rank)
    x = torch.randn(4, 8, 6, generator=g)
    for i in range(len(x)):
        model(x[i]).sum().backward()
    for inputs, labels in make_batches(rank):
        torch.nn.functional.cross_entropy(model(inputs), labels).backward()
