"""Resume where every rank checks on its own whether the train state exists: the ranks disagree.

Source: KempnerInstitute/KempnerForge issue #49 ("Race in CheckpointManager save and load collectives"):
``load()`` called ``train_state_path.exists()`` on every rank; on a distributed filesystem the answers briefly
disagreed, "some ranks enter the torch.load branch and others skip it, then the following
broadcast_object_list deadlocks". Here the disagreement is made certain: each rank looks in its node-local
directory and only rank 0's node has the file.

The bug: a rank-local ``exists()`` decides whether a rank enters ``broadcast_object_list``.
"""

import os

import torch
import torch.distributed as dist

from r3_shared import job_dir

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 4


def node_local_dir() -> str:
    path = os.path.join(job_dir("kempner-bad"), f"node{dist.get_rank()}")
    os.makedirs(path, exist_ok=True)
    return path


def load(folder: str):
    path = os.path.join(folder, "train_state.pt")
    if not os.path.exists(path):  # BUG
        return None
    box = [torch.load(path) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)  # WAITS
    return box[0]


def worker():
    folder = node_local_dir()
    if dist.get_rank() == 0:
        torch.save({"step": 12}, os.path.join(folder, "train_state.pt"))
    state = load(folder)  # WAITS
    dist.barrier()  # WAITS
    return state


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
