"""Modelled on node-local "download once per node" set-ups built on per-node subgroups: the groups come from
``torch.distributed.new_subgroups(group_size=...)`` (the torch docs' intra-machine example: one subgroup per
machine, every rank calls it and gets its own), and a cross-node group of the node leaders is created by *every*
rank and used only by its members, the way Megatron-LM's ``parallel_state.initialize_model_parallel`` builds all
groups on all ranks and keeps its own (and the "local main process first" pattern of HF
``TrainingArguments.main_process_first(local=True)``, the node-local variant of the first-rank cache).

Two ``nodes`` of 2 ranks on one machine: the node's local rank 0 "downloads" a shard into the node's directory,
``dist.barrier(group=node_group)``, and only then the other rank of the node reads it. The two leaders then
all-reduce their download sizes on the leaders' group.

Looks suspicious, is right: a barrier on a subgroup and an ``all_reduce`` under ``if local_rank == 0`` with
``group=leaders`` — each is reached by exactly the members of the group it names; the global collectives
(``new_group``, the final ``dist.barrier()``) are reached by every rank.
"""

import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
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
    node_group, _ = dist.new_subgroups(group_size=RANKS_PER_NODE)
    leaders = dist.new_group(list(range(0, dist.get_world_size(), RANKS_PER_NODE)))  # every rank calls new_group
    cache = node_cache_dir(node)
    path = os.path.join(cache, "shard.pt")
    if local_rank == 0:
        os.makedirs(cache, exist_ok=True)
    dist.barrier()  # every rank has started; the node directories exist, nothing is cached yet

    if local_rank == 0:
        download_shard(path, node)
    dist.barrier(group=node_group)  # the node's ranks wait for their leader
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
