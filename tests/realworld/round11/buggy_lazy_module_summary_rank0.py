"""A model with lazy layers, summarised on the main process before it is wrapped in DDP.

Modelled on IntelLabs/matsciml issue #106 (the examples fail under DDP because the output heads are
``nn.LazyLinear`` by default; the maintainers' workaround is a forward pass in ``setup`` on every process before
wrapping), Metta-AI/metta PR #2744 ("Remove lazy linear because DDP can't wrap it"), the ``LazyModuleMixin``
docstring (parameters are materialised by the first forward, the "dry run") and the usual "print a model summary
on rank 0" step of training scripts: torchinfo's ``summary(model, input_size=...)`` runs a forward pass with hooks
to record the layer shapes (TylerYep/torchinfo issue #117 is a lazy-parameter report). ``summarize`` is a
minimal stand-in for it: hooks, one forward under ``no_grad``, a table of output shapes and parameter counts.

Bug: the summary's forward is the model's first forward, and it runs on rank 0 only. Rank 0's ``LazyLinear``
layers are materialised, rank 1's are still ``UninitializedParameter``. In the DDP constructor rank 1 raises
("Modules with uninitialized parameters can't be used with ``DistributedDataParallel``. Run a dummy forward pass
...") while rank 0 waits in DDP's parameter-shape check (``_verify_param_shape_across_processes``, a
collective) for a rank that has left.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
    if dist.get_rank() == 0:
        print(summarize(model, example))  # BUG
    return DDP(model)  # WAITS


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    data = torch.Generator().manual_seed(300 + rank)
    example = torch.randn(4, 12, generator=data)
    model = setup_model(example)  # WAITS
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
