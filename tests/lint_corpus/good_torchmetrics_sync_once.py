# The same per-rank loop with a metric that syncs once, in compute() on every rank (dist_sync_on_step off,
# the default); and a metric built with sync_on_compute=False computed on rank 0 only (its compute syncs
# nothing).
# Models the custom metric of torchmetrics' "Implementing a Metric" page (Lightning-AI/torchmetrics
# docs/source/pages/implement.rst) and the sync_on_compute argument of src/torchmetrics/metric.py,
# written here.
# expect: none
import torch
import torch.distributed as dist
import torchmetrics
from torchmetrics import Metric


class MyAccuracy(Metric):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_state("correct", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, preds, target):
        self.correct += (preds == target).sum()

    def compute(self):
        return self.correct


def evaluate(model, batches):
    rank, world = dist.get_rank(), dist.get_world_size()
    metric = MyAccuracy()
    local = torchmetrics.MeanMetric(sync_on_compute=False)
    for x, y in batches[rank::world]:
        metric(model(x).argmax(-1), y)
        local.update(model(x).mean())
    if rank == 0:
        print(local.compute())
    return metric.compute()
