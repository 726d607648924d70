"""A timeout-free store barrier around rank 0's data preparation, with one key prefix per use.

Models: ``torch.distributed.elastic.utils.store.barrier`` (its docstring: "Since the data is not removed from
the store, the barrier can be used once per unique ``key_prefix``"), used the way timeout-free barriers are used
to let rank 0 prepare data longer than the collective timeout allows (trove's ``InfiniteBarrier``; Lightning's
``_InfiniteBarrier``); the main-process-first caching idea of HF ``datasets`` / transformers examples.

What it does: ``prepare_split(name)``: rank 0 builds the tokenized split and saves it to a cache directory shared by
the ranks (the directory comes from rank 0 by ``broadcast_object_list``); every rank waits in the store barrier,
then loads the cache file. It runs for "train", then for "valid" (``fetch_raw_split`` stands in for a 1.5 s
download on rank 0). Each call uses its own key prefix (``prepare_done/<split>/``), so the second barrier really
waits for rank 0; then a data-parallel step all-reduces the gradients and rank 0 removes the cache directory.
"""
import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.elastic.utils import store as store_util

KIND = "correct"
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


def wait_for_everyone_no_timeout(name):
    store = dist.distributed_c10d._get_default_store()
    store_util.barrier(store, dist.get_world_size(), key_prefix=f"prepare_done/{name}/", barrier_timeout=300)


def prepare_split(name, cache_dir):
    path = os.path.join(cache_dir, f"{name}.pt")
    if dist.get_rank() == 0:
        tokens = fetch_raw_split(name)
        torch.save({"input_ids": tokens}, path)
    wait_for_everyone_no_timeout(name)
    return torch.load(path)["input_ids"]


def train_step(model, opt, ids):
    opt.zero_grad()
    emb = torch.nn.functional.one_hot(ids, 50).float().mean(1)
    loss = model(emb).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
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
        loss = train_step(model, opt, shard)
        print(f"rank {rank}: loss {loss:.4f}, {valid_ids.shape[0]} validation rows")
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(cache_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
