# DDP patterns that are balanced although they look rank-dependent:
# - uneven inputs inside `with Join([model]):` (the Join tutorial): finished ranks shadow the collectives;
# - rank-0-only evaluation under no_grad through a DDP model without buffers (nanoGPT's estimate_loss):
#   DDP's forward issues no collective there;
# - the wrapped model's `.module` called on rank 0 only.
# expect: none
import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank):
    model = DDP(torch.nn.Linear(1, 1))
    inputs = [torch.ones(1) for _ in range(10 + rank)]
    with Join([model]):
        for x in inputs:
            loss = model(x).sum()
            loss.backward()
    if rank == 0:
        print(estimate_loss(model))
        print(model.module(torch.ones(1)))


@torch.no_grad()
def estimate_loss(model):
    return model(torch.ones(1)).item()
