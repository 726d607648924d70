# Resuming from the tracker file, after NVIDIA/Megatron-LM megatron/training/checkpointing.py: load_checkpoint
# returns early when `latest_checkpointed_iteration.txt` is not a file, and read_metadata then all-reduces the
# iteration (MAX) across ranks. Each rank asks its own file system: on node-local disks, or while a network
# file system's cache lags, some ranks return and the others wait in the all_reduce.
# expect: 27 early-exit dist.all_reduce
from pathlib import Path

import torch
import torch.distributed as dist


def tracker_path(load_dir):
    return Path(load_dir) / "latest_checkpointed_iteration.txt"


def read_metadata(tracker):
    text = tracker.read_text().strip()
    return int(text) if text != "release" else 0


def load_checkpoint(model, load_dir):
    tracker = tracker_path(load_dir)
    if not tracker.is_file():
        print(f"no tracker at {tracker}: training from scratch")
        return 0
    iteration = torch.tensor([read_metadata(tracker)])
    dist.all_reduce(iteration, op=dist.ReduceOp.MAX)
    return int(iteration.item())
