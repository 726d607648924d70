"""Real Lightning: a ``LightningDataModule`` that writes its data in ``prepare_data`` and reads it in ``setup``.

Source: Lightning-AI/pytorch-lightning, src/lightning/pytorch/demos/mnist_datamodule.py and the data module
documentation (docs/source-pytorch/data/datamodule.rst): ``prepare_data`` downloads/writes once (Lightning
calls it on local rank 0 only and makes the other ranks wait, data_connector.py ``_InfiniteBarrier``),
``setup`` builds the data sets on every rank, and the validation metric is logged with ``sync_dist=True`` so
every rank holds the same value. Here the "download" is a tiny regression data set saved with ``torch.save``.
"""

import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

KIND = "correct"
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
            for split, seed in (("train", 0), ("val", 1)):
                path = os.path.join(self.data_dir, f"{split}.pt")
                if not os.path.exists(path):
                    torch.save(r4_common.toy_dataset(16, seed=seed).tensors, path)

        def setup(self, stage):
            self.train_set = TensorDataset(*torch.load(os.path.join(self.data_dir, "train.pt")))
            self.val_set = TensorDataset(*torch.load(os.path.join(self.data_dir, "val.pt")))

        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=4)

        def val_dataloader(self):
            return DataLoader(self.val_set, batch_size=4)

    class Regressor(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y), sync_dist=True)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    pl.seed_everything(0, verbose=False)
    root = r4_common.shared_dir("pl_prepare_setup")
    trainer = r4_common.trainer(root)
    trainer.fit(Regressor(), datamodule=ToyDataModule(root))
    return float(trainer.callback_metrics["val_loss"])


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
