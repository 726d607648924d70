"""Lightning: ``self.all_gather`` inside ``if self.trainer.is_global_zero:`` in an epoch-end hook.

Source: Lightning-AI/pytorch-lightning issue #16541 ("`self.all_gather` in test_epoch_end hangs
forever"): ``if self.trainer.is_global_zero: outputs = self.all_gather(outputs)``; "If `is_global_zero` is
removed, it can finish successfully." Same pattern in issue #20683.
Stand-in: tests/realworld/_standins/lightning (``LightningModule.all_gather`` → strategy all_gather).
Bug: the gather under ``is_global_zero`` (BUG); rank 0 waits in it (WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist

from lightning.pytorch import LightningModule, Trainer

KIND = "buggy"
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
        self.outputs.append(self.fc(x))

    def on_validation_epoch_end(self):
        if self.trainer.is_global_zero:  # BUG
            outputs = self.all_gather(torch.cat(self.outputs))  # WAITS
            print(f"after gather, len = {len(outputs)}")
        self.outputs.clear()


def worker():
    x, y = torch.rand(10, 5), torch.rand(10, 1).round()
    batches = list(zip(x.split(5), y.split(5)))
    trainer = Trainer(max_epochs=1)
    trainer.fit(DummyModel(), batches, val_batches=batches)  # WAITS
    return trainer.current_epoch


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
