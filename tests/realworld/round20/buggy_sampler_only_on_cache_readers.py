"""
The learner's "main process first" block keeps the dataset object rank 0 got from ``load_corpus`` -- the
streaming view it returns while it writes the cache -- while the other ranks open the finished cache after the
barrier. Rank 0 holds an ``IterableDataset``, rank 1 a map-style dataset, and the loader helper, following the
Trainer's rule, gives a ``DistributedSampler`` to rank 1 only: the sampler exists on some ranks, not on others.

Models: huggingface/transformers ``Trainer._get_train_sampler`` / ``IterableDatasetShard`` (PR #13780: an
``IterableDataset`` gets no sampler, it has to shard itself), the ``training_args.main_process_first`` block of
``examples/pytorch/language-modeling/run_clm.py`` (rank 0 maps and writes the cache, the others read it), and
Lightning-AI/pytorch-lightning issue #15734 (an IterableDataset under DDP ran 314 steps per epoch instead of 157:
no rank sharded it).

Bug: ``ds = load_corpus(cache_path)`` on rank 0 returns ``StreamingCorpus`` (all 48 rows, no sampler: 12 batches);
rank 1 gets ``CachedCorpus`` with a ``DistributedSampler`` (24 rows: 6 batches). After its 6th step rank 1 reaches
the epoch's loss all-reduce while rank 0 is in its 7th DDP backward: the two collectives do not match (gloo fails
on the size mismatch, or the rank left over waits for its peer until the timeout).
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

KIND = "buggy"
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
            ds = load_corpus(cache_path)  # BUG
        dist.barrier()
        if rank != 0:
            ds = load_corpus(cache_path)  # the cache exists now
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
                loss.backward()  # WAITS
                opt.step()
                total += torch.tensor([loss.item() * len(y), len(y)])
            dist.all_reduce(total)  # WAITS
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
