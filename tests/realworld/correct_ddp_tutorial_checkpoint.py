"""DDP tutorial, checkpointing: rank 0 saves, a barrier, then every rank loads with a map_location.

Source: pytorch/tutorials intermediate_source/ddp_tutorial.rst, ``demo_checkpoint``: rank 0
``torch.save``s the DDP model's state_dict, ``dist.barrier()`` keeps the other ranks from loading before the
save is complete, every rank ``torch.load``s it, trains one step, and rank 0 removes the file afterwards (the
tutorial relies on backward's all_reduce to order the removal after every load).
Changed for the lab: the group is set up by the launcher (``worker`` expects it), and the checkpoint goes to
a fresh folder that rank 0 makes and broadcasts instead of the tutorial's fixed ``tempfile.gettempdir()`` path.
Expected: every rank finishes.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(torch.relu(self.net1(x)))


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    checkpoint_path = os.path.join(box[0], "model.checkpoint")

    ddp_model = DDP(ToyModel())
    if rank == 0:
        torch.save(ddp_model.state_dict(), checkpoint_path)
    dist.barrier()
    ddp_model.load_state_dict(torch.load(checkpoint_path, map_location="cpu", weights_only=True))

    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)
    optimizer.zero_grad()
    loss = nn.MSELoss()(ddp_model(torch.randn(20, 10)), torch.randn(20, 5))
    loss.backward()
    optimizer.step()
    if rank == 0:
        os.remove(checkpoint_path)
        os.rmdir(box[0])
    return loss.item()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
