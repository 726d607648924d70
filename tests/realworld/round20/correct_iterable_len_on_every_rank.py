"""An ``IterableDataset`` that shards rows by rank (``rows[rank::world]``: 11 and 10 rows) and, so that DDP sees the
same number of steps on every rank, defines ``__len__`` as the MIN of the shard sizes, all-reduced, and stops its
``__iter__`` there. ``len(loader)`` -- which ``DataLoader`` answers with ``len(dataset)`` for an iterable dataset --
is therefore a collective. The script reads it once on EVERY rank (``steps_per_epoch`` for the LR schedule) and the
rank-0-only log line prints that variable.

Models: ``torch.utils.data.DataLoader.__len__`` (for an ``IterableDataset`` the length is ``len(dataset)``, divided
by the batch size; the docs' warning about per-rank lengths), huggingface/transformers ``IterableDatasetShard`` and
PR #13780 ("Implement len in IterableDatasetShard"), PR #17951 (the number of examples of an iterable dataset in
distributed training), Lightning-AI/pytorch-lightning issue #15734 (iterable datasets under DDP, steps per epoch),
and the ``OneCycleLR(total_steps=epochs * len(train_loader))`` idiom.

Correct: every rank calls ``len(loader)`` the same number of times at the same points (once for the schedule, once
per epoch inside ``__iter__``), so the MIN all-reduces pair up.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 2
BATCH = 4


def load_rows():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(21, 6, generator=g)
    return [(xi, (xi[:2].sum() > 0).long()) for xi in x]


class ShardedRows(IterableDataset):
    def __init__(self, rows):
        self.shard = rows[dist.get_rank()::dist.get_world_size()]

    def __len__(self):
        n = torch.tensor([len(self.shard)])
        dist.all_reduce(n, op=dist.ReduceOp.MIN)  # every rank stops after the shortest shard
        return int(n.item())

    def __iter__(self):
        limit = len(self)
        for i, row in enumerate(self.shard):
            if i >= limit:
                break
            yield row


def log_main(msg):
    if dist.get_rank() == 0:
        print(msg, flush=True)


def worker():
    loader = DataLoader(ShardedRows(load_rows()), batch_size=BATCH)
    steps_per_epoch = len(loader)  # every rank
    log_main(f"steps per epoch: {steps_per_epoch}")

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=EPOCHS * steps_per_epoch)
    for epoch in range(EPOCHS):
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
        log_main(f"epoch {epoch} last loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.4f}")
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
