"""Generated sequences padded across ranks before an all-gather, with the cross-rank padded length memoised by
``functools.lru_cache`` on the step's length bucket -- a key that is the same on every rank at every step.

Models: accelerate ``utils/operations.py`` ``pad_across_processes`` (every rank all-gathers its size and pads to
the maximum before ``gather`` / ``gather_for_metrics``); lhotse ``DynamicBucketingSampler(sync_buckets=True)``
(every rank draws its batch from the same duration bucket at each step, from a shared seed); ``functools.lru_cache``
(the cache key is the arguments; a hit runs none of the body).

What it does: 2 ranks evaluate a toy "generator" for 4 steps. At each step both take a batch of 2 prompts from the
same length bucket (short, long, short, long), "generate" outputs as long as the prompts, pad them to
``padded_length(bucket)`` -- a MAX all-reduce of the rank's longest prompt in that bucket over its whole shard,
cached per bucket -- and all-gather the padded outputs; rank 0 counts exact matches.

Looks suspicious but is right: a collective inside an ``lru_cache``-decorated function, so most calls make no
collective. The key is the bucket, drawn from the shared seed: every rank misses at steps 0 and 1 and hits at 2
and 3, and the cached value (the bucket's longest prompt on any rank) bounds every batch of that bucket.
"""

import functools
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

PAD = -1
BUCKET_ORDER = [0, 1, 0, 1]  # drawn from the shared sampler seed: the same on every rank
PROMPT_LENGTHS = {  # per rank: the prompts of each step's batch, from the step's bucket (0: <= 6, 1: <= 10)
    0: [[3, 5], [8, 9], [4, 5], [7, 10]],
    1: [[4, 6], [9, 10], [6, 6], [10, 8]],
}


def longest_in_bucket(rank, bucket):
    """The rank's longest prompt in the bucket over its whole shard (the sampler's per-bucket metadata)."""
    return max(n for step, b in enumerate(BUCKET_ORDER) if b == bucket for n in PROMPT_LENGTHS[rank][step])


@functools.lru_cache(maxsize=None)
def padded_length(bucket):
    t = torch.tensor([longest_in_bucket(dist.get_rank(), bucket)])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def generate(lengths, step):
    g = torch.Generator().manual_seed(1000 * step + sum(lengths))
    return [torch.randint(0, 50, (n,), generator=g) for n in lengths]


def gather_padded(outputs, length):
    batch = torch.full((len(outputs), length), PAD, dtype=torch.int64)
    for i, o in enumerate(outputs):
        batch[i, : len(o)] = o
    parts = [torch.empty_like(batch) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, batch)
    return torch.cat(parts)


def evaluate(rank):
    padded_length.cache_clear()  # a fresh evaluation
    matches = total = 0
    for step, bucket in enumerate(BUCKET_ORDER):
        lengths = PROMPT_LENGTHS[rank][step]
        outputs = generate(lengths, step)
        length = padded_length(bucket)
        gathered = gather_padded(outputs, length)
        if rank == 0:
            refs = gathered.clone()  # the toy references: the outputs themselves, one token changed per batch
            refs[0, 0] = (refs[0, 0] + 1) % 50
            matches += int((gathered == refs).all(dim=1).sum())
            total += gathered.shape[0]
    return matches, total


def worker():
    rank = dist.get_rank()
    matches, total = evaluate(rank)
    if rank == 0:
        print(f"exact match {matches}/{total}; padded_length cache {padded_length.cache_info()}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
