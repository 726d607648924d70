"""Rank 0 sends its config with ``broadcast_object_list``; the others receive it with a plain tensor
``broadcast``. gloo runs both as broadcasts, which pair by position: the receivers silently get the pickled *size*.

Source: pytorch/pytorch torch/distributed/distributed_c10d.py ``broadcast_object_list`` (it first broadcasts
a tensor of object sizes, then the pickled bytes — two broadcasts) and this lab's DESIGN.md measurement
("``broadcast_object_list`` on one rank against a plain ``broadcast`` on another silently pairs"); the
mixed sender/receiver code is the shape of hand-written "send the config from rank 0" helpers.
Bug: the receiving branch uses ``broadcast`` (BUG): it pairs with the size broadcast, returns a wrong value
with no error, and rank 0 waits in the payload broadcast (WAITS) until the timeout.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def share_learning_rate(rank):
    if rank == 0:
        config = [{"lr": 0.25, "warmup": 100}]
        dist.broadcast_object_list(config, src=0)  # WAITS
        return config[0]["lr"]
    lr = torch.zeros(1, dtype=torch.float64)
    dist.broadcast(lr, src=0)  # BUG
    return lr.item()


def worker():
    return share_learning_rate(dist.get_rank())  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
