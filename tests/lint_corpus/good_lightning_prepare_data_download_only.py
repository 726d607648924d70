# prepare_data only downloads and writes (Lightning runs it on local rank 0 and holds the other ranks until
# it returns); the barrier every rank needs is in setup, which runs on every rank; a rank_zero_only log
# under is_global_zero reduces nothing (sync_dist is ignored when rank_zero_only=True).
# Models the MNISTDataModule of Lightning's datamodule documentation (Lightning-AI/pytorch-lightning
# docs/source-pytorch/data/datamodule.rst) and the rank_zero_only example of
# docs/source-pytorch/visualize/logging_advanced.rst, written here.
# expect: none
import os

import lightning.pytorch as pl
import torch


class TextDataModule(pl.LightningDataModule):
    def prepare_data(self):
        if not os.path.exists("vocab.pt"):
            torch.save({"<pad>": 0}, "vocab.pt")

    def setup(self, stage):
        self.trainer.strategy.barrier("setup")
        self.vocab = torch.load("vocab.pt")


class Tagger(pl.LightningModule):
    def on_validation_epoch_end(self):
        mean = torch.stack(self.outputs).mean()
        self.log("val_loss", mean, sync_dist=True)
        if self.trainer.is_global_zero:
            self.log("val_loss_rank0", mean, sync_dist=True, rank_zero_only=True)
