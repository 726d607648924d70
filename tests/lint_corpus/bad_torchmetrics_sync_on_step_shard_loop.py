# A metric built with dist_sync_on_step=True syncs its states on every forward call (metric(preds, target));
# called once per batch of a per-rank shard whose length differs between ranks, the ranks make different
# numbers of syncs (5 batches dealt round-robin: uneven on any even world size).
# Models the custom metric of torchmetrics' "Implementing a Metric" page (Lightning-AI/torchmetrics
# docs/source/pages/implement.rst, whose __init__ passes **kwargs such as dist_sync_on_step to Metric) and
# the "dist_sync_on_step" argument of docs/source/pages/overview.rst, written here.
# expect: 33 rank-dependent-loop metric()
import torch
import torch.distributed as dist
from torchmetrics import Metric

NUM_BATCHES = 5


class MyAccuracy(Metric):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_state("correct", default=torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, preds, target):
        self.correct += (preds == target).sum()
        self.total += target.numel()

    def compute(self):
        return self.correct.float() / self.total


def evaluate(model, batches):
    rank, world = dist.get_rank(), dist.get_world_size()
    metric = MyAccuracy(dist_sync_on_step=True)
    for i in range(rank, NUM_BATCHES, world):
        metric(model(batches[i][0]).argmax(-1), batches[i][1])
    return metric.compute()
