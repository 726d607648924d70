"""Real Lightning: ``self.log(..., sync_dist=True)`` inside ``if self.trainer.is_global_zero`` in
``on_validation_epoch_end``.

Source: Lightning-AI/pytorch-lightning issue #19783 ("DDP strategy doesn't work for on_validation_epoch_end,
always hang"): the user collects the validation outputs of every batch, and in ``on_validation_epoch_end``
computes the loss under ``if self.trainer.is_global_zero:`` and logs it with ``sync_dist=True``. Written here
as a tiny regression model, 2 CPU processes, gloo DDP, one epoch.

The bug: ``sync_dist=True`` makes ``self.log`` all-reduce the value across the ranks, but only rank 0 gets
there. Lightning defers the reduction to the end of the epoch (a barrier, then the all-reduce, in
``lightning/fabric/utilities/distributed.py`` ``_sync_ddp``), so rank 0 waits inside ``trainer.fit`` while
rank 1, with nothing to reduce, finishes ``fit`` and leaves: rank 0's barrier never completes.
"""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("lightning",)


def worker():
    import lightning.pytorch as pl

    import r4_common

    class Regressor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)
            self.validation_step_outputs = []

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.validation_step_outputs.append(torch.nn.functional.mse_loss(self.layer(x), y))

        def on_validation_epoch_end(self):
            if self.trainer.is_global_zero:  # BUG
                loss = torch.stack(self.validation_step_outputs).mean()
                self.log("val_loss", loss, sync_dist=True)
            self.validation_step_outputs.clear()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    pl.seed_everything(0, verbose=False)
    data = r4_common.toy_dataset()
    trainer = r4_common.trainer(r4_common.shared_dir("pl_global_zero_log"))
    trainer.fit(Regressor(), DataLoader(data, batch_size=4), DataLoader(data, batch_size=4))  # WAITS
    return trainer.callback_metrics.get("val_loss")


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
