"""A Lightning module that logs a rank-local metric from rank 0 only, with ``rank_zero_only=True``.

Lightning's logging API (``LightningModule.log`` docstring and the "Logging" docs page of
Lightning-AI/pytorch-lightning): ``rank_zero_only`` "tells Lightning if you are calling ``self.log`` from every
process (default) or only from rank 0. If True, you won't be able to use this metric as a monitor in
callbacks"; ``sync_dist=True`` reduces across processes and must then be called on every process (issues
#19783 and #19106 are the deadlocks when it is not).

In ``on_validation_epoch_end`` the module logs ``val_loss`` with ``sync_dist=True`` on every rank, and, under
``if self.trainer.is_global_zero:``, rank 0's own accuracy with ``rank_zero_only=True`` (and no sync). Looks
like round 4's ``buggy_pl_global_zero_epoch_end_log``, is right: a ``rank_zero_only`` value is not reduced, so
the branch reaches no collective, and no callback monitors it.
"""

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20
REQUIRES = ("lightning",)


def make_datasets():
    from torch.utils.data import TensorDataset

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=generator)
    y = (x.sum(dim=1) > 0).long()
    return TensorDataset(x[:48], y[:48]), TensorDataset(x[48:], y[48:])


def build_module():
    import lightning.pytorch as pl

    class Classifier(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
            self.correct = 0
            self.total = 0

        def training_step(self, batch, batch_idx):
            x, y = batch
            return nn.functional.cross_entropy(self.net(x), y)

        def on_validation_epoch_start(self):
            self.correct, self.total = 0, 0

        def validation_step(self, batch, batch_idx):
            x, y = batch
            logits = self.net(x)
            self.correct += (logits.argmax(dim=1) == y).sum().item()
            self.total += y.numel()
            self.log("val_loss", nn.functional.cross_entropy(logits, y), on_epoch=True, sync_dist=True)

        def on_validation_epoch_end(self):
            if self.trainer.is_global_zero:
                self.log("rank0_val_acc", self.correct / max(self.total, 1), rank_zero_only=True)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Classifier()


def worker():
    import lightning.pytorch as pl
    from lightning.pytorch.strategies import DDPStrategy
    from torch.utils.data import DataLoader

    pl.seed_everything(0, verbose=False)
    train_set, val_set = make_datasets()
    trainer = pl.Trainer(accelerator="cpu", devices=WORLD_SIZE, strategy=DDPStrategy(process_group_backend="gloo"),
                         max_epochs=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)
    module = build_module()
    trainer.fit(module, DataLoader(train_set, batch_size=8), DataLoader(val_set, batch_size=4))
    if trainer.is_global_zero:
        assert "rank0_val_acc" in trainer.callback_metrics, trainer.callback_metrics
        print({k: round(float(v), 4) for k, v in trainer.callback_metrics.items()})


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
