"""A distributed shuffle whose rank 0 scatters the permuted sample ids in per-rank pieces of different sizes.

Models: bigscience-workshop/Megatron-DeepSpeed ``tools/distshuf.py`` (``get_proc_counts``: ``divmod`` of the
sample count by the ranks, one more sample to the first ``remainder`` ranks; rank 0 shuffles and the others get
their part) and PR #63 ("shuffle index list with numpy, scatter list": ``scatterlist = list(torch.split(...,
counts))`` for ``dist.scatter``, MPI ``Scatterv`` beside it); pytorch/pytorch issue #84566 and PR #86069
(``dist.scatter`` needs every tensor of ``scatter_list`` to have the output's size: "ProcessGroupGloo::scatter:
invalid tensor size at index 1").

What it does: 3 ranks preprocess a corpus made of two files (12 and then 10 samples). For each file rank 0 draws
a permutation of the sample ids, the counts come from ``get_proc_counts`` (the same on every rank), each rank
receives its ids with ``dist.scatter``, "tokenizes" those samples and the token total is all-reduced.

The bug: the pieces are scattered as ``torch.split(perm, counts)`` with each rank's output sized
``counts[rank]`` -- an MPI ``Scatterv`` habit. The first file divides evenly (4, 4, 4) and goes through; for the
second (4, 3, 3) rank 0's scatter raises the invalid-size error before sending, and ranks 1 and 2 wait in their
``dist.scatter``.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 20

FILE_SIZES = [12, 10]


def get_proc_counts(num, num_ranks):
    per_rank, remainder = divmod(num, num_ranks)
    return [per_rank + 1 if r < remainder else per_rank for r in range(num_ranks)]


def scatter_sample_ids(num_samples, seed):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    counts = get_proc_counts(num_samples, world_size)
    mine = torch.empty(counts[rank], dtype=torch.int64)
    pieces = None
    if rank == 0:
        perm = torch.randperm(num_samples, generator=torch.Generator().manual_seed(seed))
        pieces = list(torch.split(perm, counts))  # BUG
    dist.scatter(mine, pieces, src=0)  # WAITS
    return mine


def tokenize(file_index, sample_ids):
    # a stand-in for reading each sample from the file and running the tokenizer: a length per sample
    return [(7 * int(i) + 3 * file_index) % 11 + 5 for i in sample_ids]


def preprocess(file_sizes):
    for file_index, num_samples in enumerate(file_sizes):
        ids = scatter_sample_ids(num_samples, seed=1000 + file_index)  # WAITS
        lengths = tokenize(file_index, ids)
        stats = torch.tensor([len(lengths), sum(lengths)], dtype=torch.int64)
        dist.all_reduce(stats)
        if dist.get_rank() == 0:
            print(f"file {file_index}: {stats[0].item()} samples, {stats[1].item()} tokens", flush=True)


def worker():
    preprocess(FILE_SIZES)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
