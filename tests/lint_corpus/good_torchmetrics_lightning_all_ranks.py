# torchmetrics' compute() and a Lightning self.log(..., sync_dist=True) on every rank; rank 0 only
# prints, and a rank_zero_only log does not synchronise.
# Models the torchmetrics README's distributed example (Lightning-AI/torchmetrics README.md, "Module
# metrics") and LightningModule.log's sync_dist/rank_zero_only arguments (Lightning-AI/pytorch-lightning
# src/lightning/pytorch/core/module.py), written here.
# expect: none
import torch.distributed as dist
import torchmetrics
from lightning.pytorch import LightningModule


def evaluate(model, loader):
    accuracy = torchmetrics.classification.MulticlassAccuracy(num_classes=10)
    for x, y in loader:
        accuracy.update(model(x), y)
    value = accuracy.compute()
    if dist.get_rank() == 0:
        print(f"accuracy {value:.3f}")


class Classifier(LightningModule):
    def validation_step(self, batch, batch_idx):
        loss = self.compute_loss(batch)
        self.log("val_loss", loss, sync_dist=True)
        if self.trainer.is_global_zero:
            self.log("val_loss_rank0", loss, rank_zero_only=True)
