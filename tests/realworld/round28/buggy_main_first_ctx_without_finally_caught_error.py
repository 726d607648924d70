"""A hand-written ``main_process_first`` context manager (a generator under ``@contextmanager``) whose releasing
barrier follows the ``yield`` without ``try``/``finally``, around a vocabulary cache whose write raises on the main
process -- an error the caller catches, outside the ``with``, to fall back to an in-memory vocabulary.

Models: accelerate ``state.py`` ``PartialState._goes_first`` (``if not is_main: self.wait_for_everyone()``,
``yield``, ``if is_main: self.wait_for_everyone()`` -- no ``finally``) behind ``main_process_first`` /
``local_main_process_first``, and copies of it in training repositories (``master_first(accelerator)``); transformers
``TrainingArguments.main_process_first``, which puts the main process's barrier in a ``finally``;
``contextlib.contextmanager`` (an exception in the ``with`` body is thrown into the generator at the ``yield``, so
the code after a bare ``yield`` does not run); the "cache unusable, rebuild in memory" fallbacks of preprocessing
scripts.

What it does: 2 ranks prepare a vocabulary inside ``with main_process_first(rank == 0):`` -- rank 0 builds it and
writes the JSON cache, rank 1 waits and then loads it -- wrapped in ``try``/``except (TypeError, ValueError)``
that builds it in memory instead; then they train a tiny embedding classifier (DDP) for 2 steps.

The bug: rank 0's ``json.dump`` raises ``TypeError`` (the specials are a ``set``); the exception leaves the
generator at its ``yield`` and skips the releasing ``dist.barrier()``. Rank 0's ``except`` recovers and goes on to
construct DDP (its parameter-shape all-gather and broadcast) while rank 1 still waits in the entering barrier. The
exception is caught on one rank, one frame above the context manager that holds the collective.
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

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


@contextmanager
def main_process_first(is_main):
    if not is_main:
        dist.barrier()  # WAITS
    yield  # BUG
    if is_main:
        dist.barrier()


def prepare_vocab(rank):
    path = cache_path()
    try:
        with main_process_first(rank == 0):  # WAITS
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
    vocab = prepare_vocab(rank)  # WAITS
    index = {w: i for i, w in enumerate(vocab["tokens"])}
    torch.manual_seed(0)
    model = DDP(BagOfWords(len(vocab["tokens"])))  # WAITS
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
        run(rank)  # WAITS
    finally:
        if rank == 0 and os.path.exists(cache_path()):  # after the final barrier, or on the way out of an error
            os.remove(cache_path())


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
