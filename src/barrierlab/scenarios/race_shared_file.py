"""Rank 0 builds an index from every rank's shard file, and sometimes opens a shard that is not written yet."""

import json
import os
import random
import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main

#: How long a phase takes on one rank: a small or a large batch (seconds).
BATCH_SECONDS = (0.0, 0.2)
#: Rank 0 also saves the vocabulary in phase 2, so it usually finishes writing last.
VOCABULARY_SECONDS = 0.1


def delays(seed, rank):
    """This rank's (tokenize, write) seconds for ``seed``: random-looking, but the same in every run.

    Every duration is a multiple of 200 ms, plus 100 ms on rank 0: rank 0 and any other rank finish
    phase 2 at least 100 ms apart, so which of them writes last is decided by the seed, not by the
    scheduler (with or without a barrier after phase 1).
    """
    rng = random.Random(seed * 1000 + rank)
    tokenize, write = rng.choice(BATCH_SECONDS), rng.choice(BATCH_SECONDS)
    return tokenize, write + (VOCABULARY_SECONDS if rank == 0 else 0.0)


def tokenize(rank, seconds):
    with span("1 tokenize"):
        time.sleep(seconds)  # stands in for real work on this rank's slice of the data
        return [f"rank {rank} sample {i}" for i in range(100 + rank)]


def write_shard(workdir, rank, lines, seconds):
    with span("2 write shard", "io"):
        time.sleep(seconds)  # serialising (rank 0: and saving the vocabulary)
        with open(os.path.join(workdir, f"shard-{rank}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


def build_index(workdir, world_size):
    with span("3 build index", "io"):
        sizes = {}
        for r in range(world_size):
            with open(os.path.join(workdir, f"shard-{r}.txt")) as f:
                sizes[f"shard-{r}.txt"] = len(f.read().splitlines())
        with open(os.path.join(workdir, "index.json"), "w") as f:
            json.dump(sizes, f)
        return sizes


def scenario(workdir="", seed=0, barrier_after=()):
    """Three phases; ``barrier_after`` names the phases followed by a (debugging) barrier."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    workdir = shared_folder(workdir)
    tokenize_time, write_time = delays(seed, rank)

    lines = tokenize(rank, tokenize_time)               # phase 1: every rank, its own data
    if "tokenize" in barrier_after:
        dist.barrier()
    write_shard(workdir, rank, lines, write_time)       # phase 2: every rank writes its own file
    if "write" in barrier_after:
        dist.barrier()
    if rank == 0:
        return build_index(workdir, world_size)         # phase 3: rank 0 reads every rank's file
    return len(lines)


if __name__ == "__main__":
    torchrun_main(scenario)
