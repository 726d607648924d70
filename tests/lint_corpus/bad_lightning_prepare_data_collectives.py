# Collectives inside prepare_data: Lightning calls a LightningDataModule's (and a LightningModule's)
# prepare_data on local rank 0 of each node only, while the other ranks wait in its own barrier, so a
# barrier or broadcast made there has no partner.
# Models the MNISTDataModule of Lightning's datamodule documentation (Lightning-AI/pytorch-lightning
# docs/source-pytorch/data/datamodule.rst: "prepare_data ... is called only from a single process"), with a
# vocabulary built in prepare_data and shared "to be safe", written here.
# expect: 26 branch dist.barrier
# expect: 39 hidden-collective share_vocab -> dist.broadcast_object_list
import os

import lightning.pytorch as pl
import torch
import torch.distributed as dist


def share_vocab(vocab):
    box = [vocab]
    dist.broadcast_object_list(box, src=0)
    return box[0]


class TextDataModule(pl.LightningDataModule):
    def prepare_data(self):
        if not os.path.exists("vocab.pt"):
            torch.save(build_vocab(), "vocab.pt")
        dist.barrier()

    def setup(self, stage):
        self.vocab = torch.load("vocab.pt")


def build_vocab():
    return {"<pad>": 0}


class Tagger(pl.LightningModule):
    def prepare_data(self):
        self.vocab = build_vocab()
        self.vocab = share_vocab(self.vocab)
