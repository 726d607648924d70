"""NVIDIA/TensorRT-LLM PR #16054 (an opt-in raw-weight cache for the HF weight loader, 2026; review by QiJune),
with the ranks agreeing on hit or miss before either path's collectives.

What the code does: one worker process per rank loads several checkpoints in turn, as grouped tests that reuse one
MPI session do. Each rank keeps the raw tensors it read in an in-process LRU cache whose size comes from the rank's
own free host memory (rank 0 can hold two checkpoints, rank 1 only one), so the caches diverge: on the third load
(order a, b, a) rank 0 still holds checkpoint a and rank 1 has evicted it. Before acting on its lookup every rank
all-reduces its hit flag with MIN (the reviewer's point: hit on one rank and miss on another must not lead to
different collectives); if any rank missed, all of them take the miss path -- the all-reduce of available host
memory, then the local barrier before deserialising. After every load the ranks compare a weight checksum.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
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
    dist.all_reduce(free, op=dist.ReduceOp.MIN)
    return free.item()


def prefetch_and_load(name, rank):
    available = local_available_host_memory(rank)
    prefetch = CHECKPOINT_GB < 0.9 * available  # only decides whether to warm the page cache
    dist.barrier()  # local barrier before deserialisation
    return read_checkpoint(name), prefetch


def load_weights(name, cache, rank):
    cached = cache.get(name)
    every_rank_hit = torch.tensor([1 if cached is not None else 0])
    dist.all_reduce(every_rank_hit, op=dist.ReduceOp.MIN)
    if every_rank_hit.item() == 1:
        dist.barrier()
        return cached
    weights, _ = prefetch_and_load(name, rank)
    cache.put(name, weights)
    return weights


def worker():
    rank = dist.get_rank()
    cache = RawWeightCache(capacity=int(FREE_HOST_GB[rank] // CHECKPOINT_GB))
    for name in LOAD_ORDER:
        weights = load_weights(name, cache, rank)
        checksum = torch.stack([w.sum() for w in weights]).sum().view(1)
        expected = checksum.clone()
        dist.all_reduce(checksum)
        assert torch.allclose(checksum, expected * dist.get_world_size()), name
        print(f"[rank {rank}] loaded {name}: {len(weights)} tensors", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
