"""A timeout-free store barrier around rank 0's data preparation, called twice with the same key prefix.

Models: ``torch.distributed.elastic.utils.store.barrier`` (its docstring: "Since the data is not removed from
the store, the barrier can be used once per unique ``key_prefix``"), used the way timeout-free barriers are used
to let rank 0 prepare data longer than the collective timeout allows (trove's ``InfiniteBarrier``, "Alternative to
``dist.barrier()`` that does not timeout"; Lightning's ``_InfiniteBarrier``); the main-process-first caching idea of
HF ``datasets`` / transformers examples.

What it does: ``prepare_split(name)``: rank 0 builds the tokenized split and saves it to a cache directory shared by
the ranks (the directory itself comes from rank 0 by ``broadcast_object_list``); every rank waits in the store
barrier, then loads the cache file. It runs for "train", then for "valid" (whose raw data rank 0 must first fetch:
``fetch_raw_split`` stands in for a 1.5 s download). Then a data-parallel step all-reduces the gradients.

The bug: the barrier's key prefix is the constant "prepare_done". The first call completes it (member count 2,
"last member" key set); in the second call the key is already there, so rank 1 passes at once and loads
``valid.pt`` before rank 0 has written it: ``FileNotFoundError`` on rank 1. Rank 0 writes the file, passes the
(equally stale) barrier and waits in the gradient all-reduce until rank 1's exit closes the connection.
"""
import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.elastic.utils import store as store_util

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


def shared_cache_dir():
    box = [tempfile.mkdtemp(prefix="r14_prep_cache_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def fetch_raw_split(name):
    """Stand-in for the download of a raw split (the validation split is remote: 1.5 s)."""
    if name == "valid":
        time.sleep(1.5)
    g = torch.Generator().manual_seed(len(name))
    return torch.randint(0, 50, (24, 6), generator=g)


def wait_for_everyone_no_timeout():
    store = dist.distributed_c10d._get_default_store()
    store_util.barrier(store, dist.get_world_size(), key_prefix="prepare_done", barrier_timeout=300)  # BUG


def prepare_split(name, cache_dir):
    path = os.path.join(cache_dir, f"{name}.pt")
    if dist.get_rank() == 0:
        tokens = fetch_raw_split(name)
        torch.save({"input_ids": tokens}, path)
    wait_for_everyone_no_timeout()
    return torch.load(path)["input_ids"]


def train_step(model, opt, ids):
    opt.zero_grad()
    emb = torch.nn.functional.one_hot(ids, 50).float().mean(1)
    loss = model(emb).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)  # WAITS
        p.grad /= dist.get_world_size()
    opt.step()
    return loss.item()


def worker():
    rank = dist.get_rank()
    cache_dir = shared_cache_dir()
    try:
        train_ids = prepare_split("train", cache_dir)
        valid_ids = prepare_split("valid", cache_dir)
        torch.manual_seed(0)
        model = torch.nn.Linear(50, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        shard = train_ids[rank::dist.get_world_size()]
        loss = train_step(model, opt, shard)  # WAITS
        print(f"rank {rank}: loss {loss:.4f}, {valid_ids.shape[0]} validation rows")
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(cache_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
