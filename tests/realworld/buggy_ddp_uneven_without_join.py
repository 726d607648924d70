"""The Join tutorial's problem, without Join: DDP on uneven inputs; the rank with an extra input waits in
backward's gradient all_reduce (issued by DDP's C++ reducer) for a rank that has finished.

Source: pytorch/tutorials advanced_source/generic_join.rst ("What is Join?": without it, "the ranks with
more inputs would hang waiting for the collective communications of the ranks that have finished") and
pytorch/pytorch issue #38174 (DDP with uneven inputs, the origin of ``model.join()``).
Bug: rank r gets 4 + r inputs (BUG); rank 1's last ``loss.backward()`` waits (WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(1, 1))
    inputs = [torch.tensor([1.0]) for _ in range(4 + rank)]  # BUG
    num_inputs = 0
    for x in inputs:
        num_inputs += 1
        loss = model(x).sum()
        loss.backward()  # WAITS
    return num_inputs


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
