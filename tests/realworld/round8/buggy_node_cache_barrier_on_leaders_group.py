"""Modelled on the same node-local cache as ``correct_node_cache_subgroup_barrier`` (per-node groups from
``torch.distributed.new_subgroups``; a leaders' group created by every rank, as Megatron-LM's
``initialize_model_parallel`` does; HF ``main_process_first(local=True)``), with the cache step's barrier
written on the wrong group: ``dist.barrier(group=leaders)``, the group of the node leaders, instead of the node's
group.

The bug: a rank that is not a member of the group it passes does not wait — torch warns ("Running barrier on
global rank 1 which does not belong to the given group") and returns at once. The leaders (ranks 0 and 2) barrier
with each other, which is all the barrier ever synchronises; ranks 1 and 3 go straight on to read a shard their
leader is still downloading and fail with ``FileNotFoundError``. Not a hang: a file race that the barrier was
meant to order, lost every time by the non-members (the download takes 2 s).
"""

import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 20

RANKS_PER_NODE = 2


def node_cache_dir(node):
    base = os.path.join(tempfile.gettempdir(), f"r8_node_cache_{os.environ.get('MASTER_PORT', 'lab')}")
    return os.path.join(base, f"node{node}")


def download_shard(path, node):
    time.sleep(2.0)  # stands in for the download
    g = torch.Generator().manual_seed(node)
    torch.save(torch.randn(32, 8, generator=g), path)


def worker():
    rank = dist.get_rank()
    node, local_rank = divmod(rank, RANKS_PER_NODE)
    node_group, _ = dist.new_subgroups(group_size=RANKS_PER_NODE)  # created, then not used
    leaders = dist.new_group(list(range(0, dist.get_world_size(), RANKS_PER_NODE)))  # every rank calls new_group
    cache = node_cache_dir(node)
    path = os.path.join(cache, "shard.pt")
    if local_rank == 0:
        os.makedirs(cache, exist_ok=True)
    dist.barrier()  # every rank has started; the node directories exist, nothing is cached yet

    if local_rank == 0:
        download_shard(path, node)
    dist.barrier(group=leaders)  # the node's ranks wait for their leader  # BUG
    try:
        shard = torch.load(path)
    except FileNotFoundError:
        shutil.rmtree(os.path.dirname(cache), ignore_errors=True)  # leave no temp files behind
        raise
    assert shard.shape == (32, 8)

    if local_rank == 0:
        size = torch.tensor([float(shard.numel())])
        dist.all_reduce(size, group=leaders)  # only the leaders are in `leaders`, and only they get here
        print(f"rank {rank}: {int(size.item())} values downloaded across nodes")
        assert size.item() == 32 * 8 * (dist.get_world_size() // RANKS_PER_NODE)

    dist.barrier()
    if rank == 0:
        shutil.rmtree(os.path.dirname(cache), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
