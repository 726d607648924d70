"""Join tutorial: DDP with uneven inputs, made safe by the Join context manager.

Source: pytorch/tutorials advanced_source/generic_join.rst ("Distributed Training with Uneven Inputs Using
the Join Context Manager"): every rank trains a DDP-wrapped ``nn.Linear(1, 1)`` on a different number of
inputs (rank r has 10 + r here; the tutorial uses 1000 + 5·rank batches), inside ``with Join([model]):``, so
the ranks that run out early shadow the others' gradient all_reduces instead of leaving them waiting.
Changed for the lab: gloo on CPU, fewer inputs, the launcher's group.
Expected: every rank finishes and returns how many inputs it processed.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(1, 1))
    inputs = [torch.tensor([1.0]) for _ in range(10 + rank)]
    num_inputs = 0
    with Join([model]):
        for x in inputs:
            num_inputs += 1
            loss = model(x).sum()
            loss.backward()
    return num_inputs


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    print(f"rank {dist.get_rank()} processed {worker()} inputs")
    dist.destroy_process_group()
