"""A ``@contextmanager`` "main process first" helper used as a decorator on a generator function.

Models: transformers ``TrainingArguments.main_process_first`` (replicas wait in a barrier on entry, the main process
releases them with a barrier when its block ends; used around dataset preprocessing so that the replicas read the
main process's cache), accelerate ``Accelerator.main_process_first``, and the standard library's
``contextlib.contextmanager`` / ``ContextDecorator`` (a context manager used as a decorator wraps the *call*; for a
generator function the call only creates the generator).

What it does: two ranks fine-tune a tiny DDP text classifier. The records are tokenised by the main process, which
streams them into training and writes a cache file once the last one has been produced (as ``datasets.map`` writes
its cache when it finishes); the other rank loads that cache. The tokeniser is wrapped in the ordering helper so
that the other rank waits for the cache.

The bug: ``@main_process_first(...)`` decorates the generator function ``tokenized_records`` (``# BUG``). Both
barriers run when ``tokenized_records(...)`` is called, which only creates the generator: rank 1 is released at
once, and nothing has been tokenised yet. Its first ``next()`` loads the cache, which does not exist
(``FileNotFoundError``); rank 0 writes the cache only after it has trained on every record, so it is waiting in
DDP's gradient all-reduce of the first step when rank 1 fails.
"""
import contextlib
import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

MAX_LEN = 12
RAW = [
    ("the model converged quickly", 1), ("loss went to nan", 0), ("validation accuracy improved", 1),
    ("the job hung at the barrier", 0), ("checkpoint saved", 1), ("gradient exploded again", 0),
    ("throughput doubled", 1), ("rank one timed out", 0),
]


@contextlib.contextmanager
def main_process_first(desc):
    is_main = dist.get_rank() == 0
    if not is_main:
        dist.barrier()  # replicas wait for the main process to finish `desc`
    try:
        yield
    finally:
        if is_main:
            dist.barrier()


def encode(text):
    ids = [(sum(map(ord, word)) % 97) + 1 for word in text.split()][:MAX_LEN]
    return torch.tensor(ids + [0] * (MAX_LEN - len(ids)))


@main_process_first("tokenizing the training set")  # BUG
def tokenized_records(raw, cache_path):
    if dist.get_rank() != 0:
        yield from torch.load(cache_path)
        return
    done = []
    for text, label in raw:
        record = (encode(text), label)
        done.append(record)
        yield record
    torch.save(done, cache_path)


def shared_dir():
    holder = [tempfile.mkdtemp(prefix="r18_tok_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]


def worker():
    rank = dist.get_rank()
    workdir = shared_dir()
    try:
        torch.manual_seed(0)
        model = DDP(nn.EmbeddingBag(100, 2, mode="mean"))
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        batch = []
        for ids, label in tokenized_records(RAW, os.path.join(workdir, "train.pt")):
            batch.append((ids, label))
            if len(batch) == 2:
                x = torch.stack([b[0] for b in batch])
                y = torch.tensor([b[1] for b in batch])
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()  # WAITS
                opt.step()
                batch = []
        dist.barrier()
        if rank == 0:
            print(f"last loss {loss.item():.4f}")
    finally:
        if rank == 0:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
