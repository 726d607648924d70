"""A rank-0-only call into a helper that hides a collective: save_checkpoint() ends with a barrier."""

import os
import tempfile
import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def save_checkpoint(state, path):
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)  # atomic: readers never see half a file
    dist.barrier()  # "nobody reads the checkpoint before it is complete"


def scenario(steps=4, save_every=2, ckpt_dir=None):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        ckpt_dir = ckpt_dir or tempfile.mkdtemp(prefix="barrierlab-ckpt-")
    weights = torch.zeros(4)
    for step in range(1, steps + 1):
        with span("step"):
            time.sleep(0.05)
            grad = torch.full((4,), float(rank))
        dist.all_reduce(grad)  # average the gradients
        weights -= 0.1 * grad / world_size
        if rank == 0 and step % save_every == 0:
            save_checkpoint({"step": step, "weights": weights},
                            os.path.join(ckpt_dir, "last.pt"))
    return steps


if __name__ == "__main__":
    torchrun_main(scenario)
