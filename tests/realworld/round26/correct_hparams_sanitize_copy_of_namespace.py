"""A rank-zero-only hyperparameter logger that sanitizes the run's options in place -- in a copy of the
``argparse.Namespace``'s dict, so the run's own options stay as they are on rank 0.

Models: Lightning ``lightning/fabric/utilities/logger.py`` (``_convert_params`` returns ``vars(namespace)``;
``_sanitize_params`` writes ``str(value)`` back into the dict it was given for every non-primitive value), the
loggers' ``log_hyperparams`` under ``@rank_zero_only``; wandb/wandb PRs #2995 and #4058 (a logging call that
mutated the dict passed to it, fixed by copying first).

What it does: 2 ranks train a small classifier with DDP for 2 epochs from ``argparse`` options; at fit start rank
0's ``CSVLoggerStandIn.log_hyperparams(args)`` writes ``hparams.yaml`` (with ``val_metrics: ['loss', 'acc']`` as a
string); each epoch ends with a validation pass that computes every metric named in ``args.val_metrics`` and
all-reduces the sums.

Why it is right although rank 0 alone runs a function that rewrites option values in place before a collective
that depends on those options: the dict it rewrites is ``dict(vars(args))``, a new dict. Rebinding its keys leaves
``args`` alone, so ``args.val_metrics`` is the same list on both ranks and the validation sums have the same
length everywhere.
"""

import argparse
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_tmp import remove_tmpdir, shared_tmpdir

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

METRICS = {
    "loss": lambda logits, y: F.cross_entropy(logits, y, reduction="sum").item(),
    "acc": lambda logits, y: (logits.argmax(-1) == y).sum().item(),
}


def parse_args(argv=()):
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--val-metrics", nargs="+", default=["loss", "acc"])
    p.add_argument("--scheduler", default=None)
    return p.parse_args(list(argv))


def _sanitize_params(params):
    for k in params:
        if type(params[k]) not in (bool, int, float, str, torch.Tensor):
            params[k] = str(params[k])
    return params


class CSVLoggerStandIn:
    def __init__(self, log_dir):
        self.log_dir = log_dir

    def log_hyperparams(self, params):  # rank-zero-only in Lightning
        if isinstance(params, argparse.Namespace):
            params = dict(vars(params))  # a copy: sanitizing rebinds keys of the copy only
        params = _sanitize_params(params)
        with open(os.path.join(self.log_dir, "hparams.yaml"), "w") as f:
            for k, v in sorted(params.items()):
                f.write(f"{k}: {v}\n")


def make_data(rank, n, seed):
    g = torch.Generator().manual_seed(seed + rank)
    x = torch.randn(n, 6, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long()
    return list(zip(x.split(8), y.split(8)))


def validate(model, batches, args):
    sums = torch.zeros(len(args.val_metrics) + 1, dtype=torch.float64)
    with torch.no_grad():
        for x, y in batches:
            logits = model.module(x)
            for i, name in enumerate(args.val_metrics):
                sums[i] += METRICS[name](logits, y)
            sums[-1] += len(y)
    dist.all_reduce(sums)
    return {name: sums[i].item() / sums[-1].item() for i, name in enumerate(args.val_metrics)}


def worker():
    rank = dist.get_rank()
    args = parse_args()
    torch.manual_seed(0)
    log_dir = shared_tmpdir("r26_hparams_")
    try:
        logger = CSVLoggerStandIn(log_dir)
        if rank == 0:
            logger.log_hyperparams(args)
        model = DDP(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2)))
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
        train, val = make_data(rank, 32, 0), make_data(rank, 16, 50)
        for epoch in range(args.epochs):
            for x, y in train:
                loss = F.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            metrics = validate(model, val, args)
            if rank == 0:
                print(f"epoch {epoch}: " + ", ".join(f"val_{k} {v:.3f}" for k, v in metrics.items()), flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            remove_tmpdir(log_dir)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
