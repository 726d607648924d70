"""NVIDIA/TensorRT-LLM PR #16054 (an opt-in raw-weight cache for the HF weight loader, 2026; review by QiJune):
a cache hit on one rank enters the node-local barrier while a cache miss on another rank first enters the
all-reduce of available host memory that sits in front of the same barrier.

What the code does: one worker process per rank loads several checkpoints in turn, as grouped tests that reuse one
MPI session do. Each rank keeps the raw tensors it read in an in-process LRU cache whose size comes from the rank's
own free host memory (rank 0 can hold two checkpoints, rank 1 only one). On a miss the loader asks for the node's
smallest free host memory (an all-reduce MIN, the ``_get_local_available_host_memory`` helper) to decide on
prefetching, then meets the local barrier before deserialising; a hit was made to meet that barrier too, so that a
hit does not skip a barrier a missing peer is about to enter. After every load the ranks compare a weight checksum.

The bug: hit or miss is decided from the rank's own cache. The load order a, b, a evicts checkpoint a from rank 1's
one-entry cache but not from rank 0's two-entry cache, so on the third load rank 0 hits and waits in the barrier
while rank 1 misses and waits in the host-memory all-reduce: the next collective is Barrier on one rank and
Allreduce on the other, as the review describes. The correct twin follows the review's point: the ranks agree on
hit or miss (an all-reduce MIN of the hit flag) before either path's collectives, so a hit on one rank takes the
miss path whenever a peer misses.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

CHECKPOINT_TENSORS = {"ckpt-a": 3, "ckpt-b": 4}
CHECKPOINT_GB = 7.0  # host memory one cached checkpoint takes
FREE_HOST_GB = (16.0, 9.0)  # per rank: rank 0 can cache two checkpoints, rank 1 one
LOAD_ORDER = ("ckpt-a", "ckpt-b", "ckpt-a")


class RawWeightCache:
    """The raw tensors of recently loaded checkpoints, least recently used evicted first."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.entries = {}

    def get(self, key):
        weights = self.entries.pop(key, None)
        if weights is not None:
            self.entries[key] = weights  # most recently used last
        return weights

    def put(self, key, weights):
        self.entries[key] = weights
        while len(self.entries) > self.capacity:
            oldest = next(iter(self.entries))
            del self.entries[oldest]


def read_checkpoint(name):
    return [torch.full((4,), float(i + len(name))) for i in range(CHECKPOINT_TENSORS[name])]


def local_available_host_memory(rank):
    free = torch.tensor([FREE_HOST_GB[rank]])
    dist.all_reduce(free, op=dist.ReduceOp.MIN)  # WAITS
    return free.item()


def prefetch_and_load(name, rank):
    available = local_available_host_memory(rank)  # WAITS
    prefetch = CHECKPOINT_GB < 0.9 * available  # only decides whether to warm the page cache
    dist.barrier()  # local barrier before deserialisation
    return read_checkpoint(name), prefetch


def load_weights(name, cache, rank):
    cached = cache.get(name)
    if cached is not None:  # BUG
        dist.barrier()  # WAITS
        return cached
    weights, _ = prefetch_and_load(name, rank)  # WAITS
    cache.put(name, weights)
    return weights


def worker():
    rank = dist.get_rank()
    cache = RawWeightCache(capacity=int(FREE_HOST_GB[rank] // CHECKPOINT_GB))
    for name in LOAD_ORDER:
        weights = load_weights(name, cache, rank)  # WAITS
        checksum = torch.stack([w.sum() for w in weights]).sum().view(1)
        expected = checksum.clone()
        dist.all_reduce(checksum)
        assert torch.allclose(checksum, expected * dist.get_world_size()), name
        print(f"[rank {rank}] loaded {name}: {len(weights)} tensors", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
