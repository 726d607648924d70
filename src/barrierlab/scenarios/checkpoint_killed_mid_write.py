"""Rank 0 dies half-way through writing a checkpoint: a plain write leaves a truncated file, an atomic one does not."""

import io
import os
import signal

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main


def die_after_half(data: bytes, f) -> None:
    """Write half of ``data`` to the open file ``f``, make it reach the disk, then crash (a power cut, an OOM kill)."""
    f.write(data[: len(data) // 2])
    f.flush()
    os.fsync(f.fileno())
    os.kill(os.getpid(), signal.SIGKILL)


def scenario(directory: str = "", atomic: bool = False):
    rank = dist.get_rank()
    directory = shared_folder(directory)  # under torchrun: a fresh folder made by rank 0
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "checkpoint.pt")

    model = torch.nn.Linear(64, 64)
    dist.barrier()  # everyone finished the step: does it make the save safe? (no)
    if rank == 0:
        with span("save", kind="io"):
            buffer = io.BytesIO()
            torch.save({"step": 2, "model": model.state_dict()}, buffer)
            if not atomic:
                with open(path, "wb") as f:  # writes over the previous checkpoint in place
                    die_after_half(buffer.getvalue(), f)
            else:
                tmp = path + ".tmp"  # same directory, so os.replace is a rename on one file system
                with open(tmp, "wb") as f:
                    die_after_half(buffer.getvalue(), f)  # a complete write would flush, os.fsync, then...
                os.replace(tmp, path)  # ...swap the name in one atomic step: never reached here
    dist.barrier()  # readers wait for the save: here, for a rank that died
    return torch.load(path, weights_only=True)["step"]


if __name__ == "__main__":
    torchrun_main(scenario)
