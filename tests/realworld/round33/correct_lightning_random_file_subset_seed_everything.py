"""Lightning DDP: every process draws the same random subset of the data files, after ``seed_everything(1)``.

Models: Lightning-AI/pytorch-lightning issue #9851 ("dpp training stuck ( lightning=1.4.9 )": the progress bar
stopped at 96% forever; the maintainers: "Could you make sure you have the same number of batches for all ranks. It
will hang if there is an uneven number of batches" and "When you randomly select your dataset, make sure each process
chooses the same one. You can set the seed to make sure of this: ``seed_everything(1)``"). Code modelled (written
here, not copied): a ``LightningDataModule`` whose ``setup`` samples a subset of shard files and concatenates their
records, the ``DistributedSampler`` Lightning puts in front of the train loader (``num_samples = ceil(len / world)``,
each rank indexing its own copy of the dataset), the DDP training loop and the epoch-end metric reduction
(``self.log(..., sync_dist=True)``); ``lightning.fabric.utilities.seed.seed_everything``.

The fix modelled is the maintainers' advice: ``seed_everything(1)`` before ``setup``, so every process samples
the same shards (61 records, 31 samples and 8 batches of 4 per rank) and the ranks run the same number of DDP steps
before the epoch-end reduction. 2 ranks.
"""

import datetime
import math
import random

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

SHARD_SIZES = [3, 17, 9, 12, 5, 21, 8, 14, 6, 11, 19, 4]
SHARDS_PER_RUN = 5
BATCH_SIZE = 4

rng = random.Random()


def process_entropy_seed():
    rng.seed(1000 + dist.get_rank())


def seed_everything(seed):
    rng.seed(seed)
    torch.manual_seed(seed)


class ShardDataModule:
    def setup(self):
        files = [f"shard-{i:03d}.jsonl" for i in range(len(SHARD_SIZES))]
        self.train_files = rng.sample(files, SHARDS_PER_RUN)
        self.records = []
        for name in self.train_files:
            idx = int(name[6:9])
            gen = torch.Generator().manual_seed(idx)
            for _ in range(SHARD_SIZES[idx]):
                x = torch.randn(8, generator=gen)
                self.records.append((x, int(x.sum() > 0)))

    def train_dataloader(self):
        rank, world = dist.get_rank(), dist.get_world_size()
        num_samples = math.ceil(len(self.records) / world)
        indices = list(range(len(self.records)))
        indices += indices[: num_samples * world - len(indices)]
        mine = indices[rank::world]
        for i in range(0, len(mine), BATCH_SIZE):
            chunk = [self.records[j] for j in mine[i:i + BATCH_SIZE]]
            yield torch.stack([c[0] for c in chunk]), torch.tensor([c[1] for c in chunk])


class LitModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))

    def forward(self, x):
        return self.net(x)


def log_epoch_metric(value):
    t = torch.tensor([value])
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


def fit(datamodule, module, max_epochs=2):
    datamodule.setup()
    ddp = DDP(module)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for epoch in range(max_epochs):
        total, n = 0.0, 0
        for x, y in datamodule.train_dataloader():
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, n = total + loss.item(), n + 1
        train_loss = log_epoch_metric(total / n)
        print(f"[rank {dist.get_rank()}] epoch {epoch}: {n} batches, train_loss {train_loss:.4f}", flush=True)


def worker():
    seed_everything(1)
    torch.manual_seed(0)
    dm = ShardDataModule()
    fit(dm, LitModel())
    print(f"[rank {dist.get_rank()}] shards {dm.train_files}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
