"""Generated sequences padded across ranks before an all-gather, with the cross-rank padded length memoised by
``functools.lru_cache`` on the rank's own longest sequence -- a key whose hits and misses differ per rank.

Models: accelerate ``utils/operations.py`` ``pad_across_processes`` (every rank all-gathers its size and pads to
the maximum, then ``gather`` / ``gather_for_metrics`` collects the predictions -- a collective per batch that
people try to save); lhotse ``DynamicBucketingSampler(sync_buckets=True)`` (every rank draws its batch from the
same duration bucket at each step, from a shared seed); ``functools.lru_cache`` (the cache key is the arguments;
a hit runs none of the body).

What it does: 2 ranks evaluate a toy "generator" for 4 steps. At each step both take a batch of 2 prompts from the
same length bucket (short, long, short, long), "generate" outputs as long as the prompts, pad them to
``padded_length(...)`` -- a MAX all-reduce, cached -- and all-gather the padded outputs; rank 0 counts exact
matches.

The bug: the cache key is the rank's longest output in the batch (5, 9, 5, 10 on rank 0; 6, 10, 6, 10 on rank
1). At step 3 rank 0 misses (10 is new to it) and all-reduces, while rank 1 hits (it saw 10 at step 1) and goes
straight to the all-gather of its padded outputs. The collective is in a decorated function; which ranks run its
body is decided by each rank's own cache.
"""

import functools
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

PAD = -1
BUCKET_ORDER = [0, 1, 0, 1]  # drawn from the shared sampler seed: the same on every rank
PROMPT_LENGTHS = {  # per rank: the prompts of each step's batch, from the step's bucket (0: <= 6, 1: <= 10)
    0: [[3, 5], [8, 9], [4, 5], [7, 10]],
    1: [[4, 6], [9, 10], [6, 6], [10, 8]],
}


@functools.lru_cache(maxsize=None)
def padded_length(local_max):
    t = torch.tensor([local_max])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)  # WAITS
    return int(t.item())


def generate(lengths, step):
    g = torch.Generator().manual_seed(1000 * step + sum(lengths))
    return [torch.randint(0, 50, (n,), generator=g) for n in lengths]


def gather_padded(outputs, length):
    batch = torch.full((len(outputs), length), PAD, dtype=torch.int64)
    for i, o in enumerate(outputs):
        batch[i, : len(o)] = o
    parts = [torch.empty_like(batch) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, batch)  # WAITS
    return torch.cat(parts)


def evaluate(rank):
    padded_length.cache_clear()  # a fresh evaluation
    matches = total = 0
    for step, bucket in enumerate(BUCKET_ORDER):
        lengths = PROMPT_LENGTHS[rank][step]
        outputs = generate(lengths, step)
        length = padded_length(max(len(o) for o in outputs))  # BUG # WAITS
        gathered = gather_padded(outputs, length)  # WAITS
        if rank == 0:
            refs = gathered.clone()  # the toy references: the outputs themselves, one token changed per batch
            refs[0, 0] = (refs[0, 0] + 1) % 50
            matches += int((gathered == refs).all(dim=1).sum())
            total += gathered.shape[0]
    return matches, total


def worker():
    rank = dist.get_rank()
    matches, total = evaluate(rank)  # WAITS
    if rank == 0:
        print(f"exact match {matches}/{total}; padded_length cache {padded_length.cache_info()}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
