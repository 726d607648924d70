# A learner's DDP script makes its run folder on every rank (allennlp issue #3841 and the round 19 corpus item:
# os.makedirs(serialization_dir) on every worker), and a dataset cache folder behind a check that it is missing
# (Project-MONAI/MONAI issue #2374: "the persistent dataset will first check the existence of a cache directory
# and then create a new one if needed ... these steps may run into a race condition"). All but the first rank
# to make each raise FileExistsError. Written here.
# expect: 17 every-rank-mkdir os.makedirs
# expect: 24 every-rank-mkdir self.cache_dir.mkdir
import os
from pathlib import Path

import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup_output_dir(run_dir):
    os.makedirs(run_dir)


class CachedDataset:
    def __init__(self, items, cache_dir):
        self.items, self.cache_dir = items, Path(cache_dir)
        if not self.cache_dir.exists():
            self.cache_dir.mkdir(parents=True)


def train(run_dir):
    setup_output_dir(run_dir)
    data = CachedDataset(list(range(8)), os.path.join(run_dir, "cache"))
    model = DDP(nn.Linear(4, 1))
    dist.barrier()
    return model, data
