"""YOLOv5's ``create_dataloader`` (a label cache built under ``torch_distributed_zero_first(rank)``) used as
``train.py`` uses it: the train loader with the process's rank, the rank-0-only validation loader with ``rank=-1``.

Models: ultralytics/yolov5 ``utils/torch_utils.py`` ``torch_distributed_zero_first``, ``utils/dataloaders.py``
``create_dataloader`` (dataset and its ``.cache`` built inside the context; ``DistributedSampler`` unless
``rank == -1``), ``train.py`` (``if RANK in {-1, 0}: val_loader = create_dataloader(..., rank=-1, ...)``).

What it does: every rank builds the train loader (rank 0 scans the labels and writes the cache between the two
barriers, the others read it after the first); rank 0 alone builds the val loader with ``rank=-1``, for which the
context manager makes no collective; DDP training for two epochs; rank 0 validates the unwrapped model after each
epoch. Correct: a barrier helper reached by one rank only, switched off by its argument on that path.
"""

import os
import shutil
import tempfile
from contextlib import contextmanager

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


@contextmanager
def torch_distributed_zero_first(local_rank):
    if local_rank not in (-1, 0):
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()


def scan_label_files(split, n):
    """Stand-in for reading and checking n label files of a split (image features, class ids)."""
    g = torch.Generator().manual_seed(0 if split == "train" else 1)
    labels = torch.randint(0, 4, (n,), generator=g)
    feats = torch.randn(n, 10, generator=g) + nn.functional.one_hot(labels, 10).float()
    return feats, labels


class LoadImagesAndLabels(Dataset):
    def __init__(self, path, split, n):
        cache_path = os.path.join(path, f"{split}.cache")
        if os.path.exists(cache_path):
            self.feats, self.labels = torch.load(cache_path)
        else:
            self.feats, self.labels = scan_label_files(split, n)
            torch.save((self.feats, self.labels), cache_path)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.feats[i], self.labels[i]


def create_dataloader(path, split, n, batch_size, rank=-1, shuffle=False):
    with torch_distributed_zero_first(rank):
        dataset = LoadImagesAndLabels(path, split, n)
    sampler = None if rank == -1 else DistributedSampler(dataset, shuffle=shuffle)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler), dataset


def validate(model, loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct / len(loader.dataset)


def worker():
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    holder = [tempfile.mkdtemp(prefix="r19_yolo_") if rank == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    data_dir = holder[0]
    try:
        train_loader, dataset = create_dataloader(data_dir, "train", 64, 8, rank=local_rank, shuffle=True)
        val_loader = None
        if rank in (-1, 0):
            val_loader = create_dataloader(data_dir, "val", 32, 16, rank=-1)[0]
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for epoch in range(2):
            train_loader.sampler.set_epoch(epoch)
            for x, y in train_loader:
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            if rank in (-1, 0):
                print(f"epoch {epoch}: loss {loss.item():.3f} val acc {validate(model.module, val_loader):.3f}",
                      flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
