"""sleap-nn on Lightning DDP: an epoch-end visualization callback whose rank-0 work is a block, with the
``trainer.strategy.barrier()`` at the end of the hook reached by every rank.

Models: talmolab/sleap-nn PR #437 ("Fix DDP synchronization in training callbacks": "training would appear to freeze
after each epoch ... some processes reached `trainer.strategy.barrier()` while others returned early, causing infinite
waits"; `UnifiedVizCallback`: "Early return for non-rank-0 skipped barrier", fixed by "Changed to `if
trainer.is_global_zero:` block pattern"; the correct pattern "ALL ranks ALWAYS reach this barrier"). Code modelled
(written here, not copied): ``sleap_nn/training/callbacks.py`` -- ``UnifiedVizCallback.on_train_epoch_end`` (rank 0
runs the model on a fixed training and validation example and writes the prediction figures to the run's ``viz``
folder, then a barrier), ``CSVLoggerCallback`` (the correct pattern, rank-0 block then barrier); the Lightning
``Trainer`` with ``DDPStrategy.barrier`` and the hook calls (stand-ins: a DDP training loop, a tiny confidence-map
head, ``.npy`` files for the figures).

Correct (the PR's fix): the rank-0 work is an ``if trainer.is_global_zero:`` block with no early return, and every
rank reaches the barrier at the end of the hook. 2 ranks.
"""

import datetime
import os
import shutil
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


class DDPStrategy:
    def barrier(self):
        dist.barrier()


class Trainer:
    def __init__(self, max_epochs, callbacks):
        self.max_epochs = max_epochs
        self.callbacks = callbacks
        self.strategy = DDPStrategy()
        self.current_epoch = 0
        self.callback_metrics = {}

    @property
    def is_global_zero(self):
        return dist.get_rank() == 0

    def fit(self, pl_module, batches):
        model = DDP(pl_module)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(self.max_epochs):
            self.current_epoch = epoch
            for images, confmaps in batches:
                loss = F.mse_loss(model(images), confmaps)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            self.callback_metrics["train_loss"] = loss.item()
            for callback in self.callbacks:
                callback.on_train_epoch_end(self, pl_module)


class CSVLoggerCallback:
    def __init__(self, path):
        self.path = path

    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            with open(self.path, "a") as f:
                f.write(f"{trainer.current_epoch},{trainer.callback_metrics['train_loss']:.6f}\n")
        trainer.strategy.barrier()


class UnifiedVizCallback:
    def __init__(self, viz_dir, train_example, val_example):
        self.viz_dir = viz_dir
        self.train_example = train_example
        self.val_example = val_example

    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            with torch.no_grad():
                for split, example in (("train", self.train_example), ("validation", self.val_example)):
                    pred = pl_module(example.unsqueeze(0))[0]
                    path = os.path.join(self.viz_dir, f"{split}.{trainer.current_epoch:04d}.npy")
                    np.save(path, pred.numpy())
        trainer.strategy.barrier()


class SingleInstanceModel(nn.Module):
    def __init__(self, n_nodes=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, n_nodes, 1)

    def forward(self, x):
        return self.head(self.backbone(x))


def make_batches(rank, n):
    gen = torch.Generator().manual_seed(40 + rank)
    return [(torch.rand(4, 1, 16, 16, generator=gen), torch.rand(4, 3, 16, 16, generator=gen)) for _ in range(n)]


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    run_dir = os.path.join(tempfile.gettempdir(), f"r34_sleapnn_{os.environ.get('MASTER_PORT', '0')}")
    viz_dir = os.path.join(run_dir, "viz")
    if rank == 0:
        os.makedirs(viz_dir, exist_ok=True)
    dist.barrier()
    examples = torch.rand(2, 1, 16, 16, generator=torch.Generator().manual_seed(99))
    callbacks = [CSVLoggerCallback(os.path.join(run_dir, "training_log.csv")),
                 UnifiedVizCallback(viz_dir, examples[0], examples[1])]
    trainer = Trainer(max_epochs=3, callbacks=callbacks)
    trainer.fit(SingleInstanceModel(), make_batches(rank, 3))
    print(f"[rank {rank}] finished {trainer.max_epochs} epochs, "
          f"train_loss {trainer.callback_metrics['train_loss']:.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        print(f"[rank 0] viz files: {len(os.listdir(viz_dir))}", flush=True)
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
