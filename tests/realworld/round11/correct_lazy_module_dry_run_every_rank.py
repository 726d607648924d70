"""A model with lazy layers: a dry run on every rank, then a summary on the main process, then DDP.

Modelled on the workaround in IntelLabs/matsciml issue #106 (a forward pass in ``setup`` on every process, before
the model is wrapped, to materialise the ``nn.LazyLinear`` heads), the ``LazyModuleMixin`` docstring (the "dry
run" that initialises lazy parameters) and the DDP constructor's own advice ("Run a dummy forward pass to
correctly initialize the modules"); the rank-0 summary is a minimal stand-in for torchinfo's ``summary`` (forward
hooks, one forward under ``no_grad``), as in TylerYep/torchinfo issue #117.

Each rank's dry run uses its own example batch (the lazy layers only need the input width); DDP's constructor
then broadcasts rank 0's parameters to the others.

Looks suspicious but is right: a forward pass under ``if rank == 0`` right before a DDP constructor. It runs on the
unwrapped module after every rank's dry run, so it changes nothing that DDP checks and makes no collective.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 4


def build_model():
    return nn.Sequential(nn.LazyLinear(32), nn.ReLU(), nn.LazyLinear(16), nn.ReLU(), nn.Linear(16, 1))


def summarize(model, example):
    """Stand-in for ``torchinfo.summary``: record each leaf module's output shape in one forward pass."""
    rows, hooks = [], []
    for name, module in model.named_modules():
        if not list(module.children()):
            hooks.append(module.register_forward_hook(
                lambda m, args, out, name=name: rows.append((name, type(m).__name__, tuple(out.shape)))))
    try:
        with torch.no_grad():
            model(example)
    finally:
        for h in hooks:
            h.remove()
    total = sum(p.numel() for p in model.parameters())
    lines = [f"{name:>4} {kind:<10} {shape}" for name, kind, shape in rows]
    return "\n".join(lines + [f"total params: {total}"])


def setup_model(example):
    model = build_model()
    with torch.no_grad():
        model(example)  # the dry run, on every rank: materialises the lazy layers
    if dist.get_rank() == 0:
        print(summarize(model, example))
    return DDP(model)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    data = torch.Generator().manual_seed(300 + rank)
    example = torch.randn(4, 12, generator=data)
    model = setup_model(example)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(STEPS):
        x = torch.randn(32, 12, generator=data)
        y = x.sum(dim=1, keepdim=True)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if rank == 0:
        print(f"trained {STEPS} steps; last loss {loss.item():.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
