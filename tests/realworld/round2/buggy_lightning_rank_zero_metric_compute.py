"""Lightning + torchmetrics: a metric computed in ``on_validation_end`` decorated with ``@rank_zero_only``;
``compute()`` syncs the metric's states across processes, so rank 0 waits for ranks that never come.

Source: Lightning-AI/torchmetrics issue #2684 ("FrechetInceptionDistance hangs when used with multiple
devices in PytorchLightning": ``@rank_zero_only def on_validation_end(self)`` computing the metric) and
src/lightning/pytorch/utilities/rank_zero.py (``rank_zero_only`` runs the function on global rank 0 only);
the metric here is a ``MeanSquaredError``, whose ``compute`` syncs like FID's. Needs the real Lightning and
torchmetrics (REQUIRES).
Bug: the hook is rank-zero-only (BUG) and computes a synced metric (WAITS) while rank 1 goes on.
"""

import torch
from torch.utils.data import DataLoader, TensorDataset

import lightning.pytorch as pl
from lightning.pytorch.utilities import rank_zero_only
from torchmetrics.regression import MeanSquaredError

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0
REQUIRES = ("lightning", "torchmetrics")


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.val_mse = MeanSquaredError()

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.val_mse.update(self.layer(x), y)

    @rank_zero_only  # BUG
    def on_validation_end(self):
        print(f"val mse {self.val_mse.compute().item():.4f}")  # WAITS
        self.val_mse.reset()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def dataloader(seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(32, 4, generator=generator)
    return DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8)


def worker():
    trainer = pl.Trainer(
        accelerator="cpu", devices=WORLD_SIZE, strategy="ddp", max_epochs=2, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )
    trainer.fit(Regressor(), dataloader(0), dataloader(1))  # WAITS


if __name__ == "__main__":
    worker()
