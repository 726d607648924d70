"""A rank-0-only call into a helper that hides a collective: save_checkpoint() ends with a barrier."""

import os
import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main


def write_checkpoint(state, path, delay=0.0):
    """Write ``state`` to ``path`` atomically; ``delay`` seconds stand in for a slow disk."""
    with span("save", kind="io"):
        time.sleep(delay)
        torch.save(state, path + ".tmp")
        os.replace(path + ".tmp", path)  # atomic: readers never see half a file


def save_checkpoint(state, path, delay=0.0):
    write_checkpoint(state, path, delay)
    dist.barrier()  # "nobody reads the checkpoint before it is complete"


def load_checkpoint(path):
    with span("load", kind="io"):
        return torch.load(path)


def scenario(steps=4, save_every=2, ckpt_dir=None, save_delay=0.0):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(shared_folder(ckpt_dir, prefix="barrierlab-ckpt-"), "last.pt")
    weights = torch.zeros(4)
    for step in range(1, steps + 1):
        with span("step"):
            time.sleep(0.05)
            grad = torch.full((4,), float(rank))
        dist.all_reduce(grad)  # average the gradients
        weights -= 0.1 * grad / world_size
        if rank == 0 and step % save_every == 0:
            save_checkpoint({"step": step, "weights": weights}, path, save_delay)
    return load_checkpoint(path)["step"]  # every rank evaluates the last checkpoint


if __name__ == "__main__":
    torchrun_main(scenario)
