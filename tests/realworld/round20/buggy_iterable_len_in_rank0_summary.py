"""An ``IterableDataset`` that shards rows by rank (``rows[rank::world]``: 11 and 10 rows) and, so that DDP sees the
same number of steps on every rank, defines ``__len__`` as the MIN of the shard sizes, all-reduced, and stops its
``__iter__`` there. ``len(loader)`` -- which ``DataLoader`` answers with ``len(dataset)`` for an iterable dataset --
is therefore a collective, and the learner's rank-0-only run summary calls it.

Models: ``torch.utils.data.DataLoader.__len__`` (for an ``IterableDataset`` the length is ``len(dataset)``, divided
by the batch size), huggingface/transformers ``IterableDatasetShard`` and PR #13780 ("Implement len in
IterableDatasetShard"), PR #17951 (the number of examples of an iterable dataset in distributed training),
Lightning-AI/pytorch-lightning issue #15734 (iterable datasets under DDP, steps per epoch).

Bug: the schedule is sized from the config (``max_steps``), and ``len(loader)`` is read only inside
``log_run_summary``, under ``if rank == 0``. Rank 0's MIN all-reduce there has no partner: rank 1 goes on to the DDP
constructor (whose parameter check and broadcast are its next collectives; its own first ``len`` comes only with the
first ``__iter__``). Under torchrun rank 0 waited in the ``all_reduce`` of ``__len__`` until the 20 s timeout and
rank 1 lost its peer in the DDP constructor.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 2
BATCH = 4
MAX_STEPS = 6  # from the config


def load_rows():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(21, 6, generator=g)
    return [(xi, (xi[:2].sum() > 0).long()) for xi in x]


class ShardedRows(IterableDataset):
    def __init__(self, rows):
        self.shard = rows[dist.get_rank()::dist.get_world_size()]

    def __len__(self):
        n = torch.tensor([len(self.shard)])
        dist.all_reduce(n, op=dist.ReduceOp.MIN)  # WAITS
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


def log_run_summary(loader, epochs):
    if dist.get_rank() == 0:
        print(f"{epochs} epochs x {len(loader)} steps, batch {loader.batch_size}", flush=True)  # BUG WAITS


def worker():
    loader = DataLoader(ShardedRows(load_rows()), batch_size=BATCH)
    log_run_summary(loader, EPOCHS)  # WAITS

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2)))  # WAITS
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=MAX_STEPS)
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
