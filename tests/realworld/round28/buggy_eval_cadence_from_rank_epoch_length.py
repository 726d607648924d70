"""A step-based training loop whose evaluation cadence -- "once per epoch", a ratio resolved in a dataclass's
``__post_init__`` -- is computed from the rank's own loader length, over a dataset split contiguously between the
ranks (6 and 5 samples).

Models: transformers ``TrainingArguments.eval_steps`` ("If smaller than 1, will be interpreted as ratio of total
training steps", resolved with ``math.ceil`` against ``num_update_steps_per_epoch = len(train_dataloader) //
gradient_accumulation_steps`` in ``Trainer._inner_training_loop``, where the loader is prepared by accelerate and
has the same length on every rank); HF ``datasets.distributed.split_dataset_by_node`` (a map-style dataset is
``shard``-ed contiguously: the first ``len % world_size`` ranks get one sample more); torchtitan's step-based
loop (``for step in range(max_steps)`` over a data iterator that is re-created when exhausted).

What it does: 2 ranks train a tiny regressor (DDP) for ``max_steps = 6`` steps over their shard, cycling it, with
``drop_last`` batches of 2; every ``cfg.eval_every`` steps they evaluate on the shared validation set (an
all-reduce of the loss sums).

The bug: ``TrainConfig(steps_per_epoch=len(loader), eval_ratio=1.0)`` resolves ``eval_every`` to 3 on rank 0 (3
batches) and to 2 on rank 1 (2 batches). At step 2 rank 1 evaluates -- its loss all-reduce -- while rank 0 runs
step 3's backward (DDP's gradient all-reduce); from there the two ranks' collectives are one apart, and both end
up waiting in a ``loss.backward()``. The value that differs per rank reaches the collective through a config field
computed once, far from the ``if`` that uses it.
"""

import math
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import cycle

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

N_SAMPLES = 11
BATCH = 2
MAX_STEPS = 6


@dataclass
class TrainConfig:
    steps_per_epoch: int
    max_steps: int = MAX_STEPS
    eval_ratio: float = 1.0  # evaluate once per epoch
    eval_every: int = field(init=False)

    def __post_init__(self):
        self.eval_every = max(1, math.ceil(self.steps_per_epoch * self.eval_ratio))


def split_by_node(n, rank, world_size):
    per, extra = divmod(n, world_size)
    start = rank * per + min(rank, extra)
    return range(start, start + per + (1 if rank < extra else 0))


def evaluate(model, vx, vy):
    with torch.no_grad():
        err = F.mse_loss(model.module(vx).squeeze(1), vy, reduction="sum")
    t = torch.stack([err, torch.tensor(float(len(vy)))])
    dist.all_reduce(t)
    return (t[0] / t[1]).item()


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    g = torch.Generator().manual_seed(11)
    w = torch.tensor([0.5, -1.0, 2.0])
    x = torch.randn(N_SAMPLES, 3, generator=g)
    y = x @ w
    idx = list(split_by_node(N_SAMPLES, rank, world_size))
    loader = [(x[idx[i : i + BATCH]], y[idx[i : i + BATCH]]) for i in range(0, len(idx) - BATCH + 1, BATCH)]
    vx = torch.randn(6, 3, generator=g)
    cfg = TrainConfig(steps_per_epoch=len(loader))  # BUG
    torch.manual_seed(0)
    model = DDP(nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = cycle(loader)
    for step in range(1, cfg.max_steps + 1):
        bx, by = next(batches)
        loss = F.mse_loss(model(bx).squeeze(1), by)
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        if step % cfg.eval_every == 0:
            val = evaluate(model, vx, vx @ w)
            if rank == 0:
                print(f"step {step}: val mse {val:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
