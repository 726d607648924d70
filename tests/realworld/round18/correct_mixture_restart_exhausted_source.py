"""A weighted data-mixture generator that restarts a source when it runs out ("all_exhausted").

Models: Hugging Face ``datasets.interleave_datasets`` with ``stopping_strategy="all_exhausted"`` (a finished source
is restarted until every source has been seen), the map-style contract of
``datasets.distributed.split_dataset_by_node`` (contiguous chunks, no padding), a hand-written
``interleave_datasets_with_probs`` generator over ``dataset.repeat()`` iterators, and PEP 479.

What it does: two ranks train a small DDP classifier on a mixture of a general source (10 batches per rank) and a
small "code" source of 7 batches split by node (rank 0: 4, rank 1: 3). ``mixture`` draws each step's source with a
``random.Random`` seeded identically on every rank and, when the drawn source's iterator is exhausted, starts it
again (``except StopIteration``) before yielding. Every rank therefore yields a batch at every step, the ranks run
the same ``MAX_STEPS`` steps and make the same collectives, although rank 1 restarts the code source one draw
earlier than rank 0. Correct.
"""
import datetime
import random

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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
        try:
            batch = next(iters[i])
        except StopIteration:  # this rank's chunk of source i is used up: start it again
            iters[i] = iter(sources[i])
            batch = next(iters[i])
        yield i, batch


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
        loss.backward()
        opt.step()
    dist.barrier()
    if rank == 0:
        print(f"trained {MAX_STEPS} steps: {drawn[0]} general and {drawn[1]} code batches, loss {loss.item():.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
