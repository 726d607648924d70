"""Validation on one GPU through the DDP wrapper, the other ranks parked in ``dist.barrier()``.

Models: pytorch/pytorch issue #54059 ("Using torch.distributed.barrier() makes the whole code hang"): "Run the
validation step on just one GPU, and use torch.distributed.barrier() to make the other processes wait until
validation is done" -- the model has BatchNorm layers and is called through ``DistributedDataParallel``, whose
forward broadcasts the module buffers from rank 0 (``broadcast_buffers=True``; ``_pre_forward`` ->
``_sync_buffers`` once a training forward has set ``require_forward_param_sync``) -- a collective the ranks in
the barrier never join. The workaround the thread and jpata/particleflow PR #233 ("fix pytorch multi-GPU training
hang") use: run the single-rank validation through ``model.module``.
Code modelled (written here, not copied): the issue's script (a small CNN classifier, an ``img_classifier``
with conv/pool/fc layers, trained with ``mp.spawn``-style DDP, validated on rank 0 after each epoch).

2 ranks, a conv net with BatchNorm on 8x8 images, 2 epochs of 3 steps; after epoch 0 rank 0 validates through
``model(images)`` and waits in DDP's buffer broadcast, rank 1 in the barrier.
Bug: the validation forward through the DDP wrapper on rank 0 only (BUG). Waiting: rank 0 in the forward
(WAITS), rank 1 in the barrier (WAITS).
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


class ImgClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        return self.fc(x.flatten(1))


def batches(g, n, size=8):
    return [(torch.randn(size, 3, 8, 8, generator=g), torch.randint(0, 10, (size,), generator=g)) for _ in range(n)]


def validate(model, val_loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in val_loader:
            out = model(images)  # BUG # WAITS
            correct += (out.argmax(1) == labels).sum().item()
            total += labels.numel()
    model.train()
    return correct / total


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(ImgClassifier())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1 + rank)
    val_loader = batches(torch.Generator().manual_seed(99), 2)
    for epoch in range(2):
        for images, labels in batches(g, 3):
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            acc = validate(model, val_loader)  # WAITS
            print(f"epoch {epoch}: train loss {loss.item():.4f}, val acc {acc:.3f}", flush=True)
        dist.barrier()  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
