"""Rank 0 prepares a token cache inside a "main process first" block; after the barrier EVERY rank (rank 0 too)
opens the finished cache, so every rank holds the same map-style dataset and the loader helper gives each of them a
``DistributedSampler``: the same number of batches on every rank.

Models: huggingface/transformers ``Trainer._get_train_sampler`` / ``IterableDatasetShard`` (PR #13780: an
``IterableDataset`` gets no sampler, it has to shard itself), the ``training_args.main_process_first`` block of
``examples/pytorch/language-modeling/run_clm.py`` (rank 0 maps and writes the cache, the others read it), and
Lightning-AI/pytorch-lightning issue #15734 (an IterableDataset under DDP ran 314 steps per epoch instead of 157:
no rank sharded it). The learner's ``load_corpus`` either opens the cache or "streams" rows from the hub while it
writes the cache; here the streaming path is only used to fill the cache and the training dataset is always the
cache, reopened on every rank after the barrier.

Correct: both ranks see ``CachedCorpus`` (48 rows), ``DistributedSampler`` gives each 24 rows = 6 batches of 4; the
DDP steps, the per-epoch loss all-reduce and the rank-0-only log/save helpers line up.
"""
import datetime
import json
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler, IterableDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

N_ROWS = 48
BATCH = 4
EPOCHS = 2


def download_rows():
    """Stand-in for the hub download: 48 (features, target) rows, the same on any rank that calls it."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(N_ROWS, 6, generator=g)
    y = x @ torch.linspace(-1.0, 1.0, 6) + 0.1 * torch.randn(N_ROWS, generator=g)
    return [(xi.tolist(), float(yi)) for xi, yi in zip(x, y)]


class CachedCorpus(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.rows = [json.loads(line) for line in f]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        x, y = self.rows[i]
        return torch.tensor(x), torch.tensor(y)


class StreamingCorpus(IterableDataset):
    """What ``load_corpus`` returns while the cache is being filled: rows straight from the download."""

    def __init__(self, rows):
        self.rows = rows

    def __iter__(self):
        for x, y in self.rows:
            yield torch.tensor(x), torch.tensor(y)


def write_cache(path, rows):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    os.replace(tmp, path)


def load_corpus(cache_path):
    if os.path.exists(cache_path):
        return CachedCorpus(cache_path)
    rows = download_rows()
    write_cache(cache_path, rows)
    return StreamingCorpus(rows)


def make_loader(ds, batch_size):
    # Trainer's rule: an IterableDataset shards itself, a map-style dataset gets a DistributedSampler
    sampler = None if isinstance(ds, IterableDataset) else DistributedSampler(ds, shuffle=True, seed=0)
    return DataLoader(ds, batch_size=batch_size, sampler=sampler), sampler


def log_rank0(msg):
    if dist.get_rank() == 0:
        print(f"[rank0] {msg}", flush=True)


def save_rank0(model, path):
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), path)


def worker():
    rank = dist.get_rank()
    obj = [tempfile.mkdtemp(prefix="r20_cache_") if rank == 0 else None]
    dist.broadcast_object_list(obj, src=0)
    run_dir = obj[0]
    cache_path = os.path.join(run_dir, "tokens.jsonl")
    try:
        if rank == 0:
            load_corpus(cache_path)  # fills the cache; its return value is not the training set
        dist.barrier()
        ds = CachedCorpus(cache_path)  # every rank, rank 0 included, trains on the finished cache
        loader, sampler = make_loader(ds, BATCH)
        log_rank0(f"training on {type(ds).__name__}, sampler={type(sampler).__name__}")

        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for epoch in range(EPOCHS):
            if sampler is not None:
                sampler.set_epoch(epoch)
            total = torch.zeros(2)
            for x, y in loader:
                opt.zero_grad()
                loss = nn.functional.mse_loss(model(x).squeeze(-1), y)
                loss.backward()
                opt.step()
                total += torch.tensor([loss.item() * len(y), len(y)])
            dist.all_reduce(total)
            log_rank0(f"epoch {epoch} train mse {total[0] / total[1]:.4f}")
            save_rank0(model, os.path.join(run_dir, f"epoch{epoch}.pt"))
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
