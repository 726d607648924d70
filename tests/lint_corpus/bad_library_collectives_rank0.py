# Library calls that synchronise inside, made on rank 0 only: torchmetrics' compute() and sync()
# (Lightning-AI/torchmetrics src/torchmetrics/metric.py: compute runs under sync_context, which gathers
# the states), Lightning's self.log(..., sync_dist=True) (src/lightning/pytorch/core/module.py), and
# ZeroRedundancyOptimizer.consolidate_state_dict() ("needs to be called on all ranks", pytorch/pytorch
# torch/distributed/optim/zero_redundancy_optimizer.py). Written here.
# expect: 22 branch accuracy.compute
# expect: 23 branch accuracy.sync
# expect: 29 branch optimizer.consolidate_state_dict
# expect: 36 branch self.log
import torch
import torch.distributed as dist
from lightning.pytorch import LightningModule
from torch.distributed.optim import ZeroRedundancyOptimizer
from torchmetrics import Accuracy


def evaluate(model, loader):
    accuracy = Accuracy(task="multiclass", num_classes=10)
    for x, y in loader:
        accuracy.update(model(x), y)
    if dist.get_rank() == 0:
        print(accuracy.compute())
        accuracy.sync()


def save_optimizer(model):
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=0.1)
    if dist.get_rank() == 0:
        optimizer.consolidate_state_dict()
        torch.save(optimizer.state_dict(), "optim.pt")


class Classifier(LightningModule):
    def on_validation_epoch_end(self):
        if self.trainer.is_global_zero:
            self.log("val_acc", self.val_acc, sync_dist=True)
