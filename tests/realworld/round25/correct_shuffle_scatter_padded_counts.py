"""A distributed shuffle whose rank 0 scatters the permuted sample ids in pieces padded to one size, each rank
keeping the first ``counts[rank]`` ids of its piece.

Models: bigscience-workshop/Megatron-DeepSpeed ``tools/distshuf.py`` (``get_proc_counts``) and PR #63 (the
permuted index list scattered from rank 0); pytorch/pytorch issue #84566 and PR #86069 (``dist.scatter`` needs
every tensor of ``scatter_list`` to have the output's size), hence the padding to ``max(counts)``.

What it does: 3 ranks preprocess a corpus made of two files (12 and then 10 samples). For each file rank 0 draws
a permutation of the sample ids; the counts come from ``get_proc_counts`` (the same on every rank); every piece
is padded with -1 to the largest count, every rank receives a piece of that size with ``dist.scatter`` and keeps
its first ``counts[rank]`` ids; each rank "tokenizes" its samples and the token total is all-reduced.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20

FILE_SIZES = [12, 10]


def get_proc_counts(num, num_ranks):
    per_rank, remainder = divmod(num, num_ranks)
    return [per_rank + 1 if r < remainder else per_rank for r in range(num_ranks)]


def scatter_sample_ids(num_samples, seed):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    counts = get_proc_counts(num_samples, world_size)
    width = max(counts)
    mine = torch.empty(width, dtype=torch.int64)
    pieces = None
    if rank == 0:
        perm = torch.randperm(num_samples, generator=torch.Generator().manual_seed(seed))
        pieces = [torch.nn.functional.pad(p, (0, width - len(p)), value=-1) for p in torch.split(perm, counts)]
    dist.scatter(mine, pieces, src=0)
    return mine[:counts[rank]]


def tokenize(file_index, sample_ids):
    # a stand-in for reading each sample from the file and running the tokenizer: a length per sample
    return [(7 * int(i) + 3 * file_index) % 11 + 5 for i in sample_ids]


def preprocess(file_sizes):
    for file_index, num_samples in enumerate(file_sizes):
        ids = scatter_sample_ids(num_samples, seed=1000 + file_index)
        lengths = tokenize(file_index, ids)
        stats = torch.tensor([len(lengths), sum(lengths)], dtype=torch.int64)
        dist.all_reduce(stats)
        if dist.get_rank() == 0:
            print(f"file {file_index}: {stats[0].item()} samples, {stats[1].item()} tokens", flush=True)


def worker():
    preprocess(FILE_SIZES)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
