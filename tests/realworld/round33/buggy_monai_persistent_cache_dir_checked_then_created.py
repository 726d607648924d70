"""MONAI's ``PersistentDataset`` built by every DDP rank on one shared ``cache_dir`` that does not exist yet.

Models: Project-MONAI/MONAI issue #2374 ("error in multi-process accessing of the same non-exist persistent cache":
"the persistent dataset will first check the existence of a cache directory and the create a new one if needed ...
these steps may run into a race condition in a multiprocess context"; the test's second process raised in
``PersistentDataset.__init__``) and its fix, PR #2375 ("allows for existing cache dir to avoid race condition").
Code modelled (written here, not copied): ``monai/data/dataset.py`` ``PersistentDataset.__init__`` (``if not
self.cache_dir.exists(): self.cache_dir.mkdir(parents=True)``) and ``_cachecheck`` (the deterministic transforms'
result saved under a hash of the item), MONAI's distributed tutorials (``partition_dataset`` per rank, a
``PersistentDataset`` per rank on one ``cache_dir``, DDP training).

The bug: both ranks ask whether ``cache_dir`` exists before either creates it, and both call ``mkdir``. Timing
stand-in: the ``exists`` check is a stat on a shared filesystem, answered 0.3 s (rank 0) and 0.6 s (rank 1) after it
was asked, so both answers say "missing" and rank 0 creates the folder first. Rank 1 raises ``FileExistsError``;
rank 0 waits in the DDP constructor (its parameter check across ranks). 2 ranks.
"""

import datetime
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

STAT_LATENCY = {0: 0.3, 1: 0.6}


def shared_fs_exists(path):
    answer = path.exists()
    time.sleep(STAT_LATENCY[dist.get_rank()])
    return answer


class PersistentDataset:
    def __init__(self, data, transform, cache_dir):
        self.data = data
        self.transform = transform
        self.cache_dir = Path(cache_dir)
        if not shared_fs_exists(self.cache_dir):
            self.cache_dir.mkdir(parents=True)  # BUG
        if not self.cache_dir.is_dir():
            raise ValueError("cache_dir must be a directory.")

    def _cachecheck(self, item):
        key = hashlib.md5(repr(sorted(item.items())).encode()).hexdigest()
        path = self.cache_dir / f"{key}.pt"
        if path.exists():
            return torch.load(path)
        out = self.transform(item)
        tmp = self.cache_dir / f"{key}.{os.getpid()}.tmp"
        torch.save(out, tmp)
        os.replace(tmp, path)
        return out

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self._cachecheck(self.data[i])


def load_and_scale(item):
    gen = torch.Generator().manual_seed(item["seed"])
    image = torch.rand(1, 8, 8, generator=gen)
    label = (image > 0.5).float()
    return {"image": (image - 0.5) * 2.0, "label": label}


def partition_dataset(data, num_partitions, rank):
    return data[rank::num_partitions]


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    root = Path(tempfile.gettempdir()) / f"r33_monai_{os.environ.get('MASTER_PORT', 'x')}"
    if rank == 0:
        shutil.rmtree(root, ignore_errors=True)
    dist.barrier()
    files = [{"image": f"img{i:02d}.nii.gz", "seed": i} for i in range(16)]
    train_files = partition_dataset(files, dist.get_world_size(), rank)
    train_ds = PersistentDataset(train_files, load_and_scale, cache_dir=root / "persistent_cache")
    model = DDP(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 1, 1)))  # WAITS
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(2):
        epoch_loss = 0.0
        for i in range(0, len(train_ds), 4):
            batch = [train_ds[j] for j in range(i, min(i + 4, len(train_ds)))]
            images = torch.stack([b["image"] for b in batch])
            labels = torch.stack([b["label"] for b in batch])
            loss = F.binary_cross_entropy_with_logits(model(images), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            epoch_loss += loss.item()
        print(f"[rank {rank}] epoch {epoch}: loss {epoch_loss:.4f}", flush=True)
    dist.barrier()
    print(f"[rank {rank}] cached {len(list((root / 'persistent_cache').glob('*.pt')))} items", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
