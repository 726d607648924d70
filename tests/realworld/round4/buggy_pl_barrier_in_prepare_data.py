"""Real Lightning: ``self.trainer.strategy.barrier()`` called inside ``LightningDataModule.prepare_data``.

Source: Lightning-AI/pytorch-lightning, src/lightning/pytorch/trainer/connectors/data_connector.py
(``_DataConnector.prepare_data``): the hook runs on local rank 0 only, inside ``_InfiniteBarrier`` (a gloo
group with a very long timeout whose barrier on exit makes the other ranks wait for the download). The
documentation says prepare_data is "called from a single process"; issue #19266 ("Timeout while waiting for
prepare_data to finish") is the report of the waiting side. Here the data module writes a tiny data set to a
shared directory and, "to be safe", calls the strategy's barrier before returning, as if every rank ran the
hook.

The bug: only rank 0 runs ``prepare_data``, so rank 0's ``strategy.barrier()`` on the default group has no
partner; rank 1 is already waiting in Lightning's own barrier on the other group.
"""

import os

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

    class ToyDataModule(pl.LightningDataModule):
        def __init__(self, data_dir):
            super().__init__()
            self.data_dir = data_dir

        def prepare_data(self):
            path = os.path.join(self.data_dir, "toy.pt")
            if not os.path.exists(path):
                torch.save(r4_common.toy_dataset().tensors, path)
            self.trainer.strategy.barrier("prepare_data")  # BUG # WAITS

        def setup(self, stage):
            x, y = torch.load(os.path.join(self.data_dir, "toy.pt"))
            self.train_set = torch.utils.data.TensorDataset(x, y)

        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=4)

    class Regressor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.layer(x), y)
            self.log("train_loss", loss, on_epoch=True, sync_dist=True)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    pl.seed_everything(0, verbose=False)
    root = r4_common.shared_dir("pl_prepare_barrier")
    trainer = r4_common.trainer(root)
    trainer.fit(Regressor(), datamodule=ToyDataModule(root))  # WAITS
    return float(trainer.callback_metrics["train_loss"])


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
