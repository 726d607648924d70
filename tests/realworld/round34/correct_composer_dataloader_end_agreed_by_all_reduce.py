"""MosaicML Composer ``Trainer`` under DDP with a dataloader whose length depends on the rank (each rank reads its own
shard files, of different sizes), iteration stopped on every rank when the first loader ends.

Models: mosaicml/composer issue #3415 ("Support DDP with rank-dependent dataloader lengths") and PR #3416 ("Add support
for variable length dataloaders in DDP": "DDP currently requires dataloaders to be the same length on all ranks ... The
solution terminates iteration for dataloaders on all ranks when the first dataloader finishes"; the author's test
script "would previously hang"). Code modelled (written here, not copied): ``composer/trainer/trainer.py`` of mid-2024 --
``_train_loop`` iterating ``_iter_dataloader(TrainerMode.TRAIN)``, ``_train_batch`` (forward, loss, backward through
the DDP-wrapped model, optimizer step), the epoch-end train-metric ``compute()`` (a torchmetrics-style metric whose
states are summed over ranks with ``all_reduce``); the dataset is a stand-in for a per-rank shard reader (rank 0's
shard holds 40 samples, rank 1's 32; batch size 8).

Correct (PR #3416's fix): ``_iter_dataloader`` all-reduces (MAX) an "iteration finished" flag before every batch and
stops on every rank as soon as one rank's loader is exhausted, so both ranks train 4 batches per epoch (rank 0's 5th
batch is dropped). 2 ranks.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

SHARD_SIZES = {0: 40, 1: 32}
BATCH_SIZE = 8


class ShardDataLoader:
    def __init__(self, rank):
        gen = torch.Generator().manual_seed(11 + rank)
        n = SHARD_SIZES[rank]
        self.x = torch.randn(n, 10, generator=gen)
        self.y = (self.x[:, :3].sum(dim=1) > 0).long()

    def __iter__(self):
        for i in range(0, len(self.x), BATCH_SIZE):
            yield self.x[i:i + BATCH_SIZE], self.y[i:i + BATCH_SIZE]


class MulticlassAccuracy:
    def __init__(self):
        self.correct = torch.tensor(0.0)
        self.total = torch.tensor(0.0)

    def update(self, logits, target):
        self.correct += (logits.argmax(dim=1) == target).sum()
        self.total += target.numel()

    def compute(self):
        state = torch.stack([self.correct, self.total])
        dist.all_reduce(state)
        return (state[0] / state[1]).item()


class Trainer:
    def __init__(self, model, train_dataloader, max_duration):
        self.model = DDP(model)
        self.train_dataloader = train_dataloader
        self.max_duration = max_duration
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.train_metric = MulticlassAccuracy()

    def _iter_dataloader(self):
        dataloader_iter = iter(self.train_dataloader)
        sentinel = object()
        while True:
            batch = next(dataloader_iter, sentinel)
            iter_finished = torch.tensor(1 if batch is sentinel else 0)
            dist.all_reduce(iter_finished, op=dist.ReduceOp.MAX)
            if iter_finished.item() == 1:
                break
            yield batch

    def _train_batch(self, batch):
        x, y = batch
        logits = self.model(x)
        loss = F.cross_entropy(logits, y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.train_metric.update(logits.detach(), y)
        return loss.item()

    def _train_loop(self):
        rank = dist.get_rank()
        for epoch in range(self.max_duration):
            n_batches = 0
            self.train_metric = MulticlassAccuracy()
            for batch in self._iter_dataloader():
                loss = self._train_batch(batch)
                n_batches += 1
            accuracy = self.train_metric.compute()
            print(f"[rank {rank}] epoch {epoch}: {n_batches} batches, loss {loss:.4f}, "
                  f"train accuracy {accuracy:.3f}", flush=True)

    def fit(self):
        self._train_loop()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2))
    Trainer(model, ShardDataLoader(rank), max_duration=2).fit()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
