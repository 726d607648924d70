"""Distributed Checkpoint (DCP) recipe: every rank saves and loads a sharded checkpoint.

Source: pytorch/tutorials recipes_source/distributed_checkpoint_recipe.rst ("Getting Started with
Distributed Checkpoint"): an ``AppState`` that implements ``Stateful`` with ``get_state_dict`` /
``set_state_dict`` (torch.distributed.checkpoint.state_dict), ``dcp.save({"app": AppState(...)},
checkpoint_id=CHECKPOINT_DIR)`` on every rank, and ``dcp.load`` the same way. DCP's save and load are
collective (the planner gathers and scatters the plan).
Changed for the lab: a DDP model on CPU instead of FSDP on GPUs; a fresh folder broadcast from rank 0.
Expected: every rank finishes; the loaded weights equal the saved ones.
"""

import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 3.0


class AppState(Stateful):
    def __init__(self, model, optimizer=None):
        self.model = model
        self.optimizer = optimizer

    def state_dict(self):
        model_state_dict, optimizer_state_dict = get_state_dict(self.model, self.optimizer)
        return {"model": model_state_dict, "optim": optimizer_state_dict}

    def load_state_dict(self, state_dict):
        set_state_dict(self.model, self.optimizer, model_state_dict=state_dict["model"],
                       optim_state_dict=state_dict["optim"])


def worker():
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    checkpoint_dir = box[0]

    model = DDP(nn.Linear(8, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.rand(4, 8)).sum().backward()
    optimizer.step()
    dcp.save({"app": AppState(model, optimizer)}, checkpoint_id=checkpoint_dir)
    saved = model.module.weight.detach().clone()

    fresh = DDP(nn.Linear(8, 4))
    fresh_optimizer = torch.optim.Adam(fresh.parameters(), lr=0.1)
    state = {"app": AppState(fresh, fresh_optimizer)}
    dcp.load(state_dict=state, checkpoint_id=checkpoint_dir)
    return bool(torch.equal(fresh.module.weight, saved))


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
