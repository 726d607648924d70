"""The race without a barrier after the save: readers open a checkpoint that is missing or half written."""

import io
import os
import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main


def write_slowly(data: bytes, path: str, chunks: int = 4, pause: float = 0.3) -> None:
    """Write ``data`` in a few pieces with pauses: a big checkpoint on a slow or network disk."""
    step = -(-len(data) // chunks)
    with open(path, "wb") as f:
        for i in range(0, len(data), step):
            f.write(data[i:i + step])
            f.flush()  # visible to every process on this machine (on NFS: to other nodes after close, man 5 nfs)
            time.sleep(pause)


def scenario(directory: str = "", pause: float = 0.3):
    rank = dist.get_rank()
    directory = shared_folder(directory)  # under torchrun: a fresh folder made by rank 0
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "checkpoint.pt")

    model = torch.nn.Linear(64, 64)
    dist.barrier()  # "everyone finished the step": a barrier BEFORE saving
    if rank == 0:
        with span("serialize", kind="compute"):
            buffer = io.BytesIO()
            torch.save(model.state_dict(), buffer)
            time.sleep(pause / 2)  # serialising a real model takes a while too
        with span("write", kind="io"):
            write_slowly(buffer.getvalue(), path, pause=pause)
        return f"wrote {len(buffer.getvalue())} bytes"

    # no barrier here: each reader goes ahead as soon as it is ready (ranks 1, 2, 3 at 0, 1, 2 pauses)
    time.sleep(pause * (rank - 1))
    with span("load", kind="io"):
        try:
            size = os.path.getsize(path) if os.path.exists(path) else None
            torch.load(path, weights_only=True)
            return "loaded the checkpoint"
        except Exception as error:
            seen = "no file" if size is None else f"{size} bytes"
            message = getattr(error, "strerror", None) or str(error).splitlines()[0][:60]
            return f"saw {seen}: {type(error).__name__}: {message}"


if __name__ == "__main__":
    torchrun_main(scenario)
