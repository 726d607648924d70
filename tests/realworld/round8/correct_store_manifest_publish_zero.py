"""Modelled on the same key-per-rank exchange as ``buggy_store_manifest_skip_empty_shard``
(``torch/distributed/elastic/utils/store.py`` ``synchronize``: *every* agent sets its key, whatever its data;
pytorch/pytorch issue #53840's ``store.wait`` on one key per worker), with the default group's store.

Looks suspicious, is right: only rank 0 ``store.wait``s and builds the manifest, while the other ranks go straight
to the ``dist.barrier()``; rank 2 tokenises nothing for the validation split. Every rank publishes a key for every
split — a count of 0 for an empty shard — before the barrier, so rank 0's wait ends and it reaches the barrier;
the rank-0-only manifest code makes no collective call.
"""

import json
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
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
        # An empty shard publishes 0: rank 0 waits for one key per rank and split.
        store.set(f"{PREFIX}{split}/{rank}", str(tokenize_shard(files, generator)))


def build_manifest(store, world_size):
    manifest = {}
    for split in SPLITS:
        keys = [f"{PREFIX}{split}/{r}" for r in range(world_size)]
        store.wait(keys, timedelta(seconds=TIMEOUT))
        manifest[split] = [int(store.get(k)) for k in keys]
    return manifest


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.distributed_c10d._get_default_store()
    generator = torch.Generator().manual_seed(rank)
    publish_row_counts(store, rank, world_size, generator)
    if rank == 0:
        manifest = build_manifest(store, world_size)
        print("manifest:", json.dumps(manifest))
        assert manifest["valid"][2] == 0 and all(n > 0 for n in manifest["train"]), manifest
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
