"""Lightning: a LightningModule that logs its validation loss with ``self.log(..., sync_dist=True)`` on every
rank and a callback that calls ``trainer.strategy.barrier()`` on every rank before the main process writes a
summary file; trained with ``Trainer(strategy="ddp", accelerator="cpu", devices=2)``.

Source: Lightning-AI/pytorch-lightning docs/source-pytorch/extensions/logging.rst ("sync_dist=True ... reduce
the metric across devices"; must run on all processes) and src/lightning/pytorch/strategies/ddp.py
(``barrier``), with the BoringModel of the project's bug reports (e.g. issue #20223). Needs the real
Lightning (REQUIRES). Under torchrun or barrierlab's runner Lightning starts the process group itself, with
its own timeout; in the lab it finds the launcher's group.
Correct: every rank logs with sync_dist and reaches the callback's barrier.
"""

import os
import tempfile

import torch
from torch.utils.data import DataLoader, TensorDataset

import lightning.pytorch as pl

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 3.0
REQUIRES = ("lightning",)


class BoringModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.layer(x), y)
        self.log("val_loss", loss, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class SummaryCallback(pl.Callback):
    def __init__(self, folder):
        self.folder = folder

    def on_validation_end(self, trainer, pl_module):
        trainer.strategy.barrier("summary")
        if trainer.is_global_zero:
            with open(os.path.join(self.folder, "summary.txt"), "w") as f:
                f.write(f"{trainer.callback_metrics['val_loss'].item():.4f}\n")


def dataloader(seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(32, 8, generator=generator)
    return DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=8)


def worker():
    with tempfile.TemporaryDirectory() as folder:
        trainer = pl.Trainer(
            accelerator="cpu", devices=WORLD_SIZE, strategy="ddp", max_epochs=1, logger=False,
            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
            callbacks=[SummaryCallback(folder)], default_root_dir=folder,
        )
        trainer.fit(BoringModel(), dataloader(0), dataloader(1))
        return trainer.callback_metrics["val_loss"].item()


if __name__ == "__main__":
    worker()
