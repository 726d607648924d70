"""The DDP tutorial's checkpoint demo, as a learner pastes it: the rank function sets up its own group and
calls ``destroy_process_group()`` at its end, while its DDP model is still alive.

Modelled on pytorch/tutorials intermediate_source/ddp_tutorial.rst (``setup``, ``cleanup``,
``demo_checkpoint``), written for the lab: ``run_demo``'s ``mp.spawn(demo_fn, args=(world_size,))`` becomes
``bl.run(main, world_size, args=(world_size,), init=False)``, and the checkpoint goes to a folder the test
gives instead of ``tempfile.gettempdir()``. ``main`` calls ``demo_checkpoint`` as ``run_demo`` does, so the
DDP model is freed when ``demo_checkpoint`` returns, after its group was destroyed.
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


def cleanup():
    dist.destroy_process_group()


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_checkpoint(rank, world_size, folder):
    setup(rank, world_size)
    model = ToyModel()
    ddp_model = DDP(model)
    checkpoint_path = os.path.join(folder, "model.checkpoint")
    if rank == 0:
        torch.save(ddp_model.state_dict(), checkpoint_path)
    dist.barrier()
    ddp_model.load_state_dict(torch.load(checkpoint_path, map_location="cpu", weights_only=True))
    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
    optimizer.zero_grad()
    outputs = ddp_model(torch.randn(20, 10))
    loss_fn(outputs, torch.randn(20, 5)).backward()
    optimizer.step()
    if rank == 0:
        os.remove(checkpoint_path)
    cleanup()


def main(rank, world_size, folder):
    demo_checkpoint(rank, world_size, folder)
    return rank
