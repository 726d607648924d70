"""Lightning: a callback saves a checkpoint on global rank zero only; ``Trainer.save_checkpoint`` ends
with ``strategy.barrier("Trainer.save_checkpoint")``, which the other ranks never reach.

Source: Lightning-AI/pytorch-lightning src/lightning/pytorch/trainer/trainer.py ``Trainer.save_checkpoint``
(calls ``self.strategy.barrier("Trainer.save_checkpoint")``; its docstring says it must be called on all
ranks) and issue #19045 ("Training hangs with DDP + ModelCheckpoint Callback", traceback through that
barrier in strategies/ddp.py).
Stand-in: tests/realworld/_standins/lightning.
Bug: ``save_checkpoint`` under ``trainer.is_global_zero`` in a callback (BUG); rank 0 waits in the
strategy barrier (WAITS), the other rank in the next epoch's gradient all_reduce (inside Trainer.fit).
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

from lightning.pytorch import Callback, LightningModule, Trainer

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


class Regressor(LightningModule):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 1)

    def forward(self, x):
        return self.fc(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self(x), y)


class SaveEveryEpoch(Callback):
    def __init__(self, dirpath):
        self.dirpath = dirpath

    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.is_global_zero:  # BUG
            trainer.save_checkpoint(os.path.join(self.dirpath, f"epoch={trainer.current_epoch}.ckpt"))  # WAITS


def worker():
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    batches = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(2)]
    trainer = Trainer(max_epochs=2, callbacks=[SaveEveryEpoch(box[0])])
    trainer.fit(Regressor(), batches)  # WAITS
    return trainer.current_epoch


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
