"""An ``EarlyStopping`` callback (``strict=False``) that returns from its check when the monitored key is missing
from the trainer's ``callback_metrics``; the monitored F1 is logged per rank, and only on a rank whose validation
shard has a positive example.

Models: Lightning ``callbacks/early_stopping.py`` (``_run_early_stopping_check``: ``logs =
trainer.callback_metrics``; ``if ... not self._validate_condition_metric(logs): return``, which warns and returns
``False`` for a missing key when ``strict=False``; then ``should_stop =
trainer.strategy.reduce_boolean_decision(should_stop, all=False)``, an all-reduce); ``LightningModule.log`` with
``sync_dist=False`` (the value stays the rank's own, "It is recommended to use ``sync_dist=True`` when logging on
epoch level in distributed setting"); an F1 left out of the log when it is undefined (no positive label, as
scikit-learn's ``zero_division`` warning suggests).

What it does: 2 ranks train a tiny classifier of a rare positive class (DDP) for 3 epochs; the 12 validation
samples (3 positives, all among the first 6) are split contiguously. After each epoch's
validation the module puts ``val_loss`` (all-reduced) and, when its shard has a positive label, its own
``val_f1`` into ``callback_metrics``; the callbacks run on every rank; ``EarlyStopping(monitor="val_f1",
patience=1)`` decides with a MAX all-reduce whether to stop.

The bug: rank 1's validation shard has no positive label, so ``val_f1`` is missing from its ``callback_metrics``
and its ``EarlyStopping`` returns before the decision all-reduce; rank 0 waits in it while rank 1 goes on to the
next epoch's DDP gradient all-reduce. The ``return`` is the callback's own, taken on a dict lookup.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

MAX_EPOCHS = 3


class EarlyStopping:
    def __init__(self, monitor, patience, mode="max", strict=False):
        self.monitor, self.patience, self.mode, self.strict = monitor, patience, mode, strict
        self.best, self.wait_count = None, 0

    def _validate_condition_metric(self, logs):
        if logs.get(self.monitor) is None:
            if self.strict:
                raise RuntimeError(f"Early stopping conditioned on metric `{self.monitor}` which is not available")
            return False
        return True

    def on_validation_end(self, trainer):
        self._run_early_stopping_check(trainer)  # WAITS

    def _run_early_stopping_check(self, trainer):
        logs = trainer.callback_metrics
        if not self._validate_condition_metric(logs):
            return  # BUG
        current = logs[self.monitor]
        improved = self.best is None or (current > self.best if self.mode == "max" else current < self.best)
        if improved:
            self.best, self.wait_count = current, 0
        else:
            self.wait_count += 1
        flag = torch.tensor([float(self.wait_count >= self.patience)])
        # reduce_boolean_decision(should_stop, all=False)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)  # WAITS
        trainer.should_stop = trainer.should_stop or bool(flag.item())


class Trainer:
    def __init__(self, model, callbacks):
        self.model, self.callbacks = model, callbacks
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
        self.callback_metrics, self.should_stop = {}, False

    def validation_epoch(self, x, y):
        with torch.no_grad():
            logits = self.model(x)
            loss = F.cross_entropy(logits, y, reduction="sum")
        t = torch.stack([loss, torch.tensor(float(len(y)))])
        dist.all_reduce(t)
        self.callback_metrics = {"val_loss": (t[0] / t[1]).item()}
        pred = logits.argmax(dim=1)
        tp = int(((pred == 1) & (y == 1)).sum())
        fp, fn = int(((pred == 1) & (y == 0)).sum()), int(((pred == 0) & (y == 1)).sum())
        if tp + fn > 0:  # F1 undefined without a positive label: not logged
            self.callback_metrics["val_f1"] = 2 * tp / (2 * tp + fp + fn)  # self.log("val_f1", f1)

    def fit(self, train, val):
        for epoch in range(MAX_EPOCHS):
            for x, y in train:
                loss = F.cross_entropy(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()  # WAITS
                self.optimizer.step()
            self.validation_epoch(*val)
            for cb in self.callbacks:
                cb.on_validation_end(self)  # WAITS
            if dist.get_rank() == 0:
                print(f"epoch {epoch}: {self.callback_metrics}", flush=True)
            if self.should_stop:
                break


def make_data(rank, world_size):
    g = torch.Generator().manual_seed(10 + rank)
    x = torch.randn(24, 4, generator=g)
    y = (x[:, 0] > 0.8).long()
    train = [(x[i : i + 6], y[i : i + 6]) for i in range(0, 24, 6)]
    g = torch.Generator().manual_seed(27)  # the validation split, the same on every rank; 3 positives of 12
    vx = torch.randn(12, 4, generator=g)
    vy = (vx[:, 0] > 0.8).long()
    per = len(vy) // world_size
    return train, (vx[rank * per : (rank + 1) * per], vy[rank * per : (rank + 1) * per])


def worker():
    torch.manual_seed(0)
    trainer = Trainer(DDP(nn.Linear(4, 2)), [EarlyStopping(monitor="val_f1", patience=1)])
    train, val = make_data(dist.get_rank(), dist.get_world_size())
    trainer.fit(train, val)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
