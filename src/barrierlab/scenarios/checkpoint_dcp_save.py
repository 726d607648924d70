"""torch.distributed.checkpoint.save is collective: every rank calls it, and it waits for the slowest."""

import os
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main


def scenario(directory: str = "", late_rank: int = 2, delay: float = 0.5):
    rank = dist.get_rank()
    directory = shared_folder(directory)  # under torchrun: a fresh folder made by rank 0
    os.makedirs(directory, exist_ok=True)
    checkpoint_id = os.path.join(directory, "dcp-step-2")  # a directory: DCP writes one file per rank + metadata

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    if rank == late_rank:
        with span("late", kind="compute"):
            time.sleep(delay)  # this rank is still busy with its step
    with span("dcp.save", kind="io"):
        dcp.save({"model": model.state_dict()}, checkpoint_id=checkpoint_id)  # every rank must call it

    restored = {"model": torch.nn.Linear(4, 2).state_dict()}  # fresh weights, overwritten in place
    with span("dcp.load", kind="io"):
        dcp.load(restored, checkpoint_id=checkpoint_id)  # collective too
    return torch.equal(restored["model"]["weight"], model.weight.detach())


if __name__ == "__main__":
    torchrun_main(scenario)
