"""The standard pattern: rank 0 saves, a barrier, then every rank loads the checkpoint (weights_only=True)."""

import os

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main


def scenario(directory: str = ""):
    rank = dist.get_rank()
    directory = shared_folder(directory)  # under torchrun: a fresh folder made by rank 0
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "checkpoint.pt")

    torch.manual_seed(rank)  # every rank starts with different weights...
    model = torch.nn.Linear(4, 2)
    if rank == 0:
        with span("save", kind="io"):
            torch.save(model.state_dict(), path)
    dist.barrier()  # readers are safe: the file is complete before anyone opens it
    with span("load", kind="io"):
        state = torch.load(path, weights_only=True)
    model.load_state_dict(state)
    return round(model.weight.sum().item(), 4)  # ...and ends with rank 0's: all values equal


if __name__ == "__main__":
    torchrun_main(scenario)
