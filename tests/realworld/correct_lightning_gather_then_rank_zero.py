"""Lightning: gather on every rank, then print on global rank zero only.

Source: Lightning-AI/pytorch-lightning issue #16541 ("`self.all_gather` in test_epoch_end hangs forever"):
the hook called ``self.all_gather`` inside ``if self.trainer.is_global_zero:``; the fix (and Lightning's
docs on ``LightningModule.all_gather``) is to call it on every rank and keep only the printing under
``is_global_zero``. A ``Trainer.save_checkpoint`` called on every rank, as Lightning requires.
Stand-in: tests/realworld/_standins/lightning.
Expected: every rank finishes.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

from lightning.pytorch import LightningModule, Trainer

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


class DummyModel(LightningModule):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(5, 1)
        self.outputs = []

    def forward(self, x):
        return self.fc(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.binary_cross_entropy_with_logits(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, _ = batch
        self.outputs.append(self(x))

    def on_validation_epoch_end(self):
        outputs = self.all_gather(torch.cat(self.outputs))
        if self.trainer.is_global_zero:
            print(f"after gather, shape = {tuple(outputs.shape)}")
        self.outputs.clear()


def worker():
    x, y = torch.rand(10, 5), torch.rand(10, 1).round()
    batches = list(zip(x.split(5), y.split(5)))
    trainer = Trainer(max_epochs=1)
    model = DummyModel()
    trainer.fit(model, batches, val_batches=batches)
    box = [tempfile.mkdtemp() if trainer.is_global_zero else None]
    dist.broadcast_object_list(box, src=0)
    trainer.save_checkpoint(os.path.join(box[0], "last.ckpt"))
    return trainer.current_epoch


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
