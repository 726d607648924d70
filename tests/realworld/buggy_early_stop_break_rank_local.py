"""Early stopping on a rank-local validation loss: one rank breaks out of the training loop, the others
wait in the next step's gradient all_reduce.

Source: huggingface/accelerate PR #1940 ("a `break` can happen on process 0 but not on process 1. As a
result this will cause the code to hang"), the forum thread it cites (discuss.pytorch.org "How to use break
in DistributedDataParallel training"), and ultralytics/yolov5 PR #8345 (the stop decision had to be
broadcast).
Bug: ``break`` on a loss that differs per rank (BUG); the rank that stays waits in ``loss.backward()``
(WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker(patience=1):
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    best, bad_epochs, epochs = float("inf"), 0, 0
    val_losses = [1.0, 0.8, 0.9, 0.7] if rank == 0 else [1.0, 0.8, 0.7, 0.6]
    for epoch in range(4):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()  # WAITS
        optimizer.step()
        optimizer.zero_grad()
        epochs += 1
        val_loss = val_losses[epoch]
        if val_loss < best:
            best, bad_epochs = val_loss, 0
        else:
            bad_epochs += 1
        if bad_epochs >= patience:
            break  # BUG
    return epochs


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
