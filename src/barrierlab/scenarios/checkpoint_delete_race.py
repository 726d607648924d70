"""Rank 0 deletes a checkpoint right after its own load, while the other ranks have not read it yet."""

import os
import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main


def scenario(directory: str = "", barrier_before_delete: bool = False, reader_delay: float = 0.3):
    rank = dist.get_rank()
    directory = shared_folder(directory)  # under torchrun: a fresh folder made by rank 0
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "resume.pt")

    if rank == 0:
        with span("save", kind="io"):
            torch.save(torch.nn.Linear(4, 2).state_dict(), path)
    dist.barrier()  # the file is complete: everyone may load it
    if rank != 0:
        time.sleep(reader_delay)  # the other ranks are busy a little longer (building their model, say)
    try:
        with span("load", kind="io"):
            torch.load(path, weights_only=True)
        outcome = "loaded"
    except FileNotFoundError as error:
        outcome = f"FileNotFoundError: {error.strerror}"
    if barrier_before_delete:
        dist.barrier()  # every rank has loaded: now the file may go
    if rank == 0:
        with span("delete", kind="io"):
            os.remove(path)  # "clean up": the checkpoint has been consumed
    return outcome


if __name__ == "__main__":
    torchrun_main(scenario)
