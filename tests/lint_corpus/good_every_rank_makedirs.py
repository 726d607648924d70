# The fixes of allennlp issue #3841 and Project-MONAI/MONAI PR #2375: every rank makes the run folder and the
# cache folder with exist_ok=True; a per-rank folder (its path holds the rank) and a folder only rank 0 makes before
# a barrier need no exist_ok. Written here.
# expect: none
import os
from pathlib import Path

import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup_output_dir(run_dir):
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(os.path.join(run_dir, f"rank{dist.get_rank()}"))
    if dist.get_rank() == 0:
        os.makedirs(os.path.join(run_dir, "shared"))
    dist.barrier()


class CachedDataset:
    def __init__(self, items, cache_dir):
        self.items, self.cache_dir = items, Path(cache_dir)
        self.cache_dir.mkdir(parents=True, exist_ok=True)


def train(run_dir):
    setup_output_dir(run_dir)
    data = CachedDataset(list(range(8)), os.path.join(run_dir, "cache"))
    model = DDP(nn.Linear(4, 1))
    dist.barrier()
    return model, data
