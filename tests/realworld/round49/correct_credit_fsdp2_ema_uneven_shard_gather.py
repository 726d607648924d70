"""CREDIT (NCAR miles-credit): the FSDP2 EMA shadow is gathered with the live parameter's global shape (the fix).

Source: NCAR/miles-credit PR #416 ("EMA support under FSDP2 via sharded shadow", 2026-06, closes #414). The EMA
tracker of this weather/climate model trainer keeps, on every rank, the EMA of its own DTensor shard (``to_local()``
views, no communication per step) and materialises the full shadow only at checkpoint save, via
``DTensor.from_local(...).full_tensor()``, for rank 0 to write ``checkpoint_ema.pt``. The PR: "The first
validation run deadlocked at save: ``DTensor.from_local`` infers the global shape as ``local x world_size``, which
is wrong for FSDP2's unevenly padded dim-0 shards -- ranks disagreed on the all_gather size and hung."

Correct twin (the PR's fix): ``from_local`` is given the live parameter's ``shape`` and ``stride``, so every rank
agrees that the head weight has 5 rows (shards 3 + 2) and the all-gather of the shadow matches.
"""

import datetime
import os
import tempfile

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard, distribute_tensor

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


def shard_model(model, mesh):
    """What ``fully_shard`` leaves behind: every parameter a DTensor sharded on dim 0."""
    for name, param in list(model.named_parameters()):
        module_name, _, attr = name.rpartition(".")
        module = model.get_submodule(module_name)
        setattr(module, attr, torch.nn.Parameter(distribute_tensor(param.detach(), mesh, [Shard(0)])))
    return model


class EMATracker:
    def __init__(self, model, decay=0.9):
        self.decay = decay
        self.params = dict(model.named_parameters())
        self.shadow = {n: p.to_local().detach().clone() for n, p in self.params.items()}  # local shards only

    @torch.no_grad()
    def update(self):
        for n, p in self.params.items():
            self.shadow[n].mul_(self.decay).add_(p.to_local(), alpha=1 - self.decay)

    def state_dict(self):
        full = {}
        for n, p in self.params.items():
            full[n] = DTensor.from_local(self.shadow[n], p.device_mesh, p.placements,
                                         shape=p.shape, stride=p.stride()).full_tensor()
        return full


def worker():
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    torch.manual_seed(0)
    model = shard_model(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 5)), mesh)  # head: 5 rows
    ema = EMATracker(model)
    for step in range(3):
        with torch.no_grad():
            for p in model.parameters():  # a stand-in optimizer step on each rank's shard
                p.to_local().mul_(0.99).add_(0.01 * (step + 1))
        ema.update()
    root = [tempfile.mkdtemp(prefix="credit_ema_") if rank == 0 else None]
    dist.broadcast_object_list(root, src=0)
    state = ema.state_dict()
    if rank == 0:
        torch.save(state, os.path.join(root[0], "checkpoint_ema.pt"))
        print(f"rank 0: saved EMA {[tuple(v.shape) for v in state.values()]} to {root[0]}", flush=True)
    dist.barrier()
    if rank == 0:
        os.remove(os.path.join(root[0], "checkpoint_ema.pt"))
        os.rmdir(root[0])
    print(f"rank {rank}: checkpoint done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
