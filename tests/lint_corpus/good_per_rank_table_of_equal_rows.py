# Each rank serves its own requests, read from a table with one row per rank; every row has 4 steps, so every
# rank all-reduces 4 times although the loop's iterable is indexed by the rank. Modelled on
# tests/realworld/round12/correct_autotuner_cache_hit_vote.py (TensorRT-LLM PR #14240's autotuner); written here.
# expect: none
import torch
import torch.distributed as dist

REQUESTS = {0: (12, 20, 9, 30), 1: (14, 11, 28, 17)}


def serve():
    rank = dist.get_rank()
    for tokens in REQUESTS[rank]:
        timing = torch.tensor([float(tokens)])
        dist.all_reduce(timing)
