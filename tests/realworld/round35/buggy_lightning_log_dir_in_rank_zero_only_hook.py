"""Lightning DDP: a ``@rank_zero_only`` ``on_fit_start`` hook reads ``self.trainer.log_dir`` -- a property that
broadcasts the directory from rank 0 to every rank.

Models: Lightning-AI/pytorch-lightning issue #18148 ("Calling `trainer.log_dir` in `rank_zero_only` with DDP makes the
program freeze after first step": "if I call `trainer.log_dir` in the code, it mysteriously makes the code freeze
after the first step. However this happens only when I call `trainer.log_dir` only in process 0, otherwise everything
works as expected"; the repro's BoringModel with ``@rank_zero_only def on_fit_start(self)``). Code modelled (written
here, not copied): ``lightning/pytorch/trainer/trainer.py`` -- ``Trainer.log_dir`` (the logger's ``log_dir``, then
``self.strategy.broadcast(dirpath)``), ``lightning/pytorch/strategies/ddp.py`` -- ``DDPStrategy.broadcast``
(``broadcast_object_list(obj, src, group=WORLD)``), ``lightning_utilities``' ``rank_zero_only`` decorator, the
``on_fit_start`` hook called by ``fit`` before the first training step (stand-ins: a CSV-logger-like ``log_dir``, a
DDP loop, the BoringModel's linear layer and MSE-to-ones loss).

The bug: only rank 0 enters the hook and the broadcast in ``log_dir``; rank 1 goes on to its first training step and
its DDP backward. 2 ranks.
"""

import datetime
import functools
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15


def rank_zero_only(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if dist.get_rank() == 0:
            return fn(*args, **kwargs)  # WAITS
        return None
    return wrapped


class DDPStrategy:
    def broadcast(self, obj, src=0):
        holder = [obj]
        dist.broadcast_object_list(holder, src=src)  # WAITS
        return holder[0]


class CSVLogger:
    def __init__(self, save_dir, name="lightning_logs", version=0):
        self.save_dir, self.name, self.version = save_dir, name, version

    @property
    def log_dir(self):
        return os.path.join(self.save_dir, self.name, f"version_{self.version}")


class Trainer:
    def __init__(self, logger, max_steps):
        self.loggers = [logger]
        self.strategy = DDPStrategy()
        self.max_steps = max_steps

    @property
    def log_dir(self):
        dirpath = self.loggers[0].log_dir
        return self.strategy.broadcast(dirpath)  # WAITS

    def fit(self, module, batches):
        module.trainer = self
        model = DDP(module)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        module.on_fit_start()  # WAITS
        for step, batch in enumerate(batches[:self.max_steps]):
            loss = module.loss(model(batch))
            optimizer.zero_grad()
            loss.backward()  # WAITS
            optimizer.step()
        return loss.item()


class BoringModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(32, 2)
        self.trainer = None

    def forward(self, x):
        return self.layer(x)

    def loss(self, prediction):
        return F.mse_loss(prediction, torch.ones_like(prediction))

    @rank_zero_only
    def on_fit_start(self):
        print(f"[rank 0] logging to {self.trainer.log_dir}", flush=True)  # BUG # WAITS


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(40 + rank)
    batches = [torch.randn(8, 32, generator=gen) for _ in range(4)]
    logger = CSVLogger(os.path.join(tempfile.gettempdir(), "r35_lightning_logs"))
    loss = Trainer(logger, max_steps=4).fit(BoringModel(), batches)  # WAITS
    print(f"[rank {rank}] trained 4 steps, loss {loss:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
