# A DDP-wrapped model's forward and backward are collectives: rank-0-only evaluation through a model with
# BatchNorm buffers (DDP's forward broadcasts them), reached through a helper that receives the DDP model,
# and a training loop whose length depends on the rank (DDP's gradient all_reduce in backward).
# expect: 20 rank-dependent-loop model() (DDP forward)
# expect: 21 rank-dependent-loop loss.backward() (DDP backward)
# expect: 23 hidden-collective validate -> model() (DDP forward)
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def validate(model, batch):
    with torch.no_grad():
        return model(batch).mean().item()


def train(rank, batches):
    model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
    for batch in batches[: len(batches) - rank]:
        out = model(batch)
        loss = out.pow(2).mean(); loss.backward()
    if rank == 0:
        validate(model, batches[0])
