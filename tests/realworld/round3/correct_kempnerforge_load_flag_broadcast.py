"""Resume: rank 0 alone decides whether a train state exists and reads it; every rank gets it by broadcast.

Source: KempnerInstitute/KempnerForge pull request #50 ("Fix race in CheckpointManager save/load collectives",
kempnerforge/checkpoint/manager.py): ``save()`` ends with a barrier so no rank returns before rank 0 has
committed ``train_state.pt``; ``load()`` lets rank 0's ``exists()`` decide for the group, broadcasts the flag,
and only rank 0 calls ``torch.load``; ``broadcast_object_list`` hands the state to the others.
"""

import os

import torch
import torch.distributed as dist

from r3_shared import job_dir

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 5


def save(folder: str, state: dict) -> None:
    if dist.get_rank() == 0:
        tmp = os.path.join(folder, "train_state.pt.tmp")
        torch.save(state, tmp)
        os.replace(tmp, os.path.join(folder, "train_state.pt"))
    dist.barrier()


def load(folder: str) -> dict | None:
    path = os.path.join(folder, "train_state.pt")
    flag = torch.tensor([int(os.path.exists(path)) if dist.get_rank() == 0 else 0])
    dist.broadcast(flag, src=0)
    if not flag.item():
        return None
    box = [torch.load(path) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def worker():
    folder = job_dir("kempner-ok")
    assert load(os.path.join(folder, "missing")) is None
    save(folder, {"step": 40, "tokens_seen": 40 * 4096})
    state = load(folder)
    assert state["step"] == 40
    return state


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
