"""A weighted data-mixture generator that calls ``next()`` on a source that one rank exhausts first.

Models: Hugging Face ``datasets.interleave_datasets`` (``probabilities``, ``seed``, ``stopping_strategy``
"first_exhausted" / "all_exhausted", the latter restarting a finished source), the map-style contract of
``datasets.distributed.split_dataset_by_node`` (contiguous chunks, no padding), a hand-written
``interleave_datasets_with_probs`` generator (``yield next(iterators[index])`` over ``dataset.repeat()`` iterators)
and PEP 479 (a ``StopIteration`` raised inside a generator becomes ``RuntimeError``).

What it does: two ranks train a small DDP classifier on a mixture of two sources: a general source with 10 batches
per rank and a small "code" source of 7 batches split by node (rank 0: 4, rank 1: 3). The generator ``mixture``
draws the source of each step with a ``random.Random`` seeded identically on every rank (so the ranks agree on the
sequence) and yields ``next()`` of that source's iterator; training runs ``MAX_STEPS`` steps.

The bug: ``yield next(iters[i])`` (``# BUG``) assumes no source runs out within ``MAX_STEPS``, as it would with
repeating iterators. The seeded draws pick the code source at steps 0, 3, 4, 6, 8 and 11; at step 6 (its 4th draw) rank 0 gets its 4th code
batch and waits in DDP's gradient all-reduce; rank 1 has only 3, ``next()`` raises ``StopIteration`` inside the
generator and Python turns it into ``RuntimeError: generator raised StopIteration`` on rank 1 alone.
"""
import datetime
import random

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

MAX_STEPS = 12
WEIGHTS = (0.6, 0.4)


def split_by_node(items, rank, world_size):
    per, extra = divmod(len(items), world_size)
    start = rank * per + min(rank, extra)
    return items[start:start + per + (1 if rank < extra else 0)]


def make_source(n_batches, seed, shift):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_batches):
        x = torch.randn(4, 6, generator=g) + shift
        out.append((x, (x.sum(1) > shift * 6).long()))
    return out


def mixture(sources, weights, seed):
    rng = random.Random(seed)
    iters = [iter(s) for s in sources]
    while True:
        i = rng.choices(range(len(sources)), weights=weights)[0]
        yield i, next(iters[i])  # BUG


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    general = make_source(10, seed=10 + rank, shift=0.0)
    code = split_by_node(make_source(7, seed=99, shift=1.0), rank, world)
    drawn = [0, 0]
    for step, (source, (x, y)) in enumerate(mixture([general, code], WEIGHTS, seed=1234)):
        if step >= MAX_STEPS:
            break
        drawn[source] += 1
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()  # WAITS
        opt.step()
    dist.barrier()
    if rank == 0:
        print(f"trained {MAX_STEPS} steps: {drawn[0]} general and {drawn[1]} code batches, loss {loss.item():.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
