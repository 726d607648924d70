"""A learner's multi-task evaluation helper that accumulates into a mutable default dict, reduced with a
torchvision-style ``reduce_dict``; a rank-0-only preview evaluation leaves its keys in the shared default.

Models: pytorch/vision ``references/detection/utils.py`` ``reduce_dict`` (sorted names, the values stacked into one
tensor, one ``all_reduce``), the Python tutorial's "Important warning" on default argument values ("The default value
is evaluated only once. This makes a difference when the default is a mutable object such as a list, dictionary"),
and pylint's ``dangerous-default-value`` (W0102) check; the rank-0 preview is the usual "print a few predictions on
the main process" block of a training script.

What it does: a two-head model (a classification task and a regression task) trains with DDP for two epochs. After
the first epoch's training rank 0 runs ``evaluate`` on three hand-picked demo batches (task ``demo``) and prints the
result; then every rank runs ``evaluate`` on its validation shard and all ranks ``reduce_dict`` the per-task loss sums
and counts.

The bug: ``evaluate(model, batches, stats={})`` -- the default dict is created once, when the function is defined.
Rank 0's preview call leaves ``demo_loss`` / ``demo_count`` in it, so rank 0's validation dict has 6 keys and rank 1's
has 4; the stacked tensors differ in size and gloo aborts a rank in ``reduce_dict``'s ``all_reduce`` (the other loses
its peer there). Without the preview the sums would silently grow across epochs.
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


class TwoHeadNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
        self.cls_head = nn.Linear(16, 3)
        self.reg_head = nn.Linear(16, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.cls_head(h), self.reg_head(h).squeeze(-1)


def task_loss(model, x, y, task):
    logits, value = model(x)
    if task == "reg":
        return nn.functional.mse_loss(value, y.float())
    return nn.functional.cross_entropy(logits, y.long() % 3)


def make_batches(seed, n, tasks):
    g = torch.Generator().manual_seed(seed)
    batches = []
    for i in range(n):
        x = torch.randn(8, 6, generator=g)
        y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
        batches.append((x, y, tasks[i % len(tasks)]))
    return batches


def evaluate(model, batches, stats={}):  # BUG
    with torch.no_grad():
        for x, y, task in batches:
            loss = task_loss(model, x, y, task)
            stats[f"{task}_loss"] = stats.get(f"{task}_loss", 0.0) + loss.item() * len(x)
            stats[f"{task}_count"] = stats.get(f"{task}_count", 0) + len(x)
    return stats


def reduce_dict(input_dict):
    names = sorted(input_dict)
    values = torch.tensor([float(input_dict[k]) for k in names], dtype=torch.float64)
    dist.all_reduce(values)  # WAITS
    return dict(zip(names, values.tolist()))


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(TwoHeadNet(), find_unused_parameters=True)  # one head per batch
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    train_batches = make_batches(10 + rank, 6, ["cls", "reg"])
    val_batches = make_batches(20 + rank, 4, ["cls", "reg"])
    demo_batches = make_batches(99, 3, ["demo"])
    for epoch in range(2):
        model.train()
        for x, y, task in train_batches:
            loss = task_loss(model, x, y, task)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        if rank == 0 and epoch == 0:
            preview = evaluate(model.module, demo_batches)
            print(f"preview after epoch {epoch}: {preview}", flush=True)
        totals = reduce_dict(evaluate(model.module, val_batches))  # WAITS
        if rank == 0:
            summary = {t: totals[f"{t}_loss"] / totals[f"{t}_count"] for t in ("cls", "reg")}
            print(f"epoch {epoch}: validation {summary}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
