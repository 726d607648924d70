"""YOLOv5's ``create_dataloader`` (a label cache built under ``torch_distributed_zero_first(rank)``) used for the
rank-0-only validation loader with the process's own rank instead of ``rank=-1``.

Models: ultralytics/yolov5 ``utils/torch_utils.py`` ``torch_distributed_zero_first`` (``if local_rank not in [-1, 0]:
barrier()`` before the body, ``if local_rank == 0: barrier()`` after it), ``utils/dataloaders.py`` ``create_dataloader``
(the dataset, which caches its labels to ``<path>.cache``, is built inside that context; a ``DistributedSampler``
unless ``rank == -1``) and ``train.py`` (the train loader gets ``rank=LOCAL_RANK``; under ``if RANK in {-1, 0}:`` the
val loader gets ``rank=-1`` -- the context is a no-op for it). The many forks that copy ``train.py`` keep that ``-1``.

What it does: every rank builds the train loader (rank 0 scans the labels and writes the cache, the others wait in the
first barrier and then read it); rank 0 alone builds the val loader; every rank wraps the model in DDP and trains for
two epochs; rank 0 validates the unwrapped model after each epoch (no collective).

The bug: the val loader is created with ``rank=local_rank`` (0) instead of ``-1``, so on rank 0 the context manager's
closing ``dist.barrier()`` runs -- a collective that rank 1 never makes. Rank 0 waits in it while rank 1 is in the DDP
constructor's collectives; the mismatched pair fails (gloo).
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

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


@contextmanager
def torch_distributed_zero_first(local_rank):
    if local_rank not in (-1, 0):
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()  # WAITS


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
    with torch_distributed_zero_first(rank):  # WAITS
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
            val_loader = create_dataloader(data_dir, "val", 32, 16, rank=local_rank)[0]  # BUG # WAITS
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4)))  # WAITS
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
