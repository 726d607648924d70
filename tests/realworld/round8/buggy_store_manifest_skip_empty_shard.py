"""Modelled on the key-per-rank exchange through the c10d store of ``torch/distributed/elastic/utils/store.py``
(``synchronize`` / ``get_all``: every agent sets ``{prefix}{rank}``, then the keys of all ranks are read, under a
``store_timeout``), used as data-prep code does outside the collectives — the pattern of pytorch/pytorch issue
#53840's reproduction (rank 0 ``store.wait``s on one key per worker; each worker ``store.set``s its own) — with
the default group's store from ``distributed_c10d._get_default_store()``.

The bug: a preprocessing step in which every rank tokenises its shard and publishes its row count, but ``continue``s
past an empty shard before publishing ("nothing to report"): 2 validation files on 3 ranks leave rank 2 without
one. Rank 0 builds the manifest: it ``store.wait``s for the key of every rank, split by split, and rank 2's
validation key never comes. Ranks 1 and 2 go on to the
``dist.barrier()`` that ends the preprocessing and wait there for rank 0.
"""

import json
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 20

PREFIX = "prep/rows/"


SPLITS = {"train": 6, "valid": 2}  # number of files per split


def shard_files(split, rank, world_size):
    files = [f"{split}-{i:03d}.jsonl" for i in range(SPLITS[split])]
    return files[rank::world_size]  # 2 validation files on 3 ranks: rank 2 gets none


def tokenize_shard(files, generator):
    rows = 0
    for _ in files:
        rows += int(torch.randint(50, 100, (1,), generator=generator))
    return rows


def publish_row_counts(store, rank, world_size, generator):
    for split in SPLITS:
        files = shard_files(split, rank, world_size)
        if not files:
            continue  # BUG
        store.set(f"{PREFIX}{split}/{rank}", str(tokenize_shard(files, generator)))


def build_manifest(store, world_size):
    manifest = {}
    for split in SPLITS:
        keys = [f"{PREFIX}{split}/{r}" for r in range(world_size)]
        store.wait(keys, timedelta(seconds=TIMEOUT))  # WAITS
        manifest[split] = [int(store.get(k)) for k in keys]
    return manifest


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.distributed_c10d._get_default_store()
    generator = torch.Generator().manual_seed(rank)
    publish_row_counts(store, rank, world_size, generator)
    if rank == 0:
        manifest = build_manifest(store, world_size)  # WAITS
        print("manifest:", json.dumps(manifest))
    dist.barrier()  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
