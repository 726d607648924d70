"""Rank 0 deletes a checkpoint after its own load; what, if anything, makes it wait for the other ranks' loads?

``sync`` is what every rank calls between its load and rank 0's delete: ``"none"``, ``"barrier"``, a blocking
``"all_reduce"`` (orders the delete after every load, like the barrier), or ``"async all_reduce"``
(``async_op=True``, waited for only at the end: what an NCCL all_reduce looks like from the host).
"""

import os
import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main

SYNCS = ("none", "barrier", "all_reduce", "async all_reduce")


def scenario(directory: str = "", sync: str = "none", reader_delay: float = 0.3):
    if sync not in SYNCS:
        raise ValueError(f"sync must be one of {', '.join(map(repr, SYNCS))}, not {sync!r}")
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
    work = None
    if sync == "barrier":
        dist.barrier()  # every rank has loaded: now the file may go
    elif sync == "all_reduce":
        dist.all_reduce(torch.ones(1))  # blocking: no rank leaves before every rank has contributed
    elif sync == "async all_reduce":
        work = dist.all_reduce(torch.ones(1), async_op=True)  # returns at once, like NCCL seen from the host
    if rank == 0:
        with span("delete", kind="io"):
            os.remove(path)  # "clean up": the checkpoint has been consumed
    if work is not None:
        work.wait()  # the all_reduce completes here, after the delete
    return outcome


if __name__ == "__main__":
    torchrun_main(scenario)
