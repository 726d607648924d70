"""A hand-written ``main_process_first`` context manager (a generator under ``@contextmanager``) whose releasing
barrier is in a ``finally``, around a vocabulary cache whose write raises on the main process -- an error the
caller catches, outside the ``with``, to fall back to an in-memory vocabulary.

Models: transformers ``TrainingArguments.main_process_first`` (``try:`` ... ``if not is_main_process:`` barrier,
``yield``, ``finally: if is_main_process:`` barrier); accelerate ``PartialState._goes_first`` (the same two
barriers without the ``finally``); ``contextlib.contextmanager`` (an exception in the ``with`` body is thrown into
the generator at the ``yield``; a ``finally`` around it still runs); the "cache unusable, rebuild in memory"
fallbacks of preprocessing scripts.

What it does: 2 ranks prepare a vocabulary inside ``with main_process_first(rank == 0):`` -- rank 0 builds it and
writes the JSON cache, rank 1 waits and then loads it -- wrapped in ``try``/``except (TypeError, ValueError)``
that builds it in memory instead; then they train a tiny embedding classifier (DDP) for 2 steps.

Looks suspicious but is right: rank 0's ``json.dump`` raises ``TypeError`` (the specials are a ``set``) inside a
``with`` that holds a barrier, and the error is caught on that rank alone. The ``finally`` makes rank 0's releasing
barrier run on the way out; rank 1, released, finds the half-written file, fails to parse it
(``JSONDecodeError``) and falls back the same way, so both ranks reach DDP's constructor after one barrier each.
"""

import os
from contextlib import contextmanager
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_vocab import build_vocab, cache_path, load_or_build

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


@contextmanager
def main_process_first(is_main):
    try:
        if not is_main:
            dist.barrier()
        yield
    finally:
        if is_main:
            dist.barrier()


def prepare_vocab(rank):
    path = cache_path()
    try:
        with main_process_first(rank == 0):
            vocab = load_or_build(path, write=rank == 0)
    except (TypeError, ValueError) as e:
        print(f"[rank {rank}] vocabulary cache unusable ({type(e).__name__}: {e}); building it in memory", flush=True)
        vocab = build_vocab()
    return vocab


class BagOfWords(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab_size, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, ids, offsets):
        return self.head(self.emb(ids, offsets))


def run(rank):
    vocab = prepare_vocab(rank)
    index = {w: i for i, w in enumerate(vocab["tokens"])}
    torch.manual_seed(0)
    model = DDP(BagOfWords(len(vocab["tokens"])))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    lines = ["the cat sat", "a dog ran far"] if rank == 0 else ["the end", "the cat ran"]
    ids = torch.tensor([index.get(w, 1) for line in lines for w in line.split()])
    offsets = torch.tensor([0, len(lines[0].split())])
    y = torch.tensor([0, 1])
    for step in range(2):
        loss = F.cross_entropy(model(ids, offsets), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    dist.barrier()
    if rank == 0:
        print(f"vocab {len(vocab['tokens'])} tokens, loss {loss.item():.4f}", flush=True)


def worker():
    rank = dist.get_rank()
    try:
        run(rank)
    finally:
        if rank == 0 and os.path.exists(cache_path()):  # after the final barrier, or on the way out of an error
            os.remove(cache_path())


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
