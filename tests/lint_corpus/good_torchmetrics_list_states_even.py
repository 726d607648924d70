# A list state reduced with "cat" (torchmetrics concatenates it before one all_gather, whatever its length)
# after a per-rank loop of different lengths; a retrieval metric (list states gathered element by element)
# updated the same number of times on every rank (a DistributedSampler pads the shards).
# Models the "cat" list states of torchmetrics' "Implementing a Metric" page (Lightning-AI/torchmetrics
# docs/source/pages/implement.rst) and src/torchmetrics/metric.py _sync_dist, written here.
# expect: none
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torchmetrics import Metric
from torchmetrics.retrieval import RetrievalMRR


class Latencies(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("values", default=[], dist_reduce_fx="cat")

    def update(self, seconds):
        self.values.append(seconds)

    def compute(self):
        return self.values.median()


def evaluate(model, queries, dataset):
    mine = [q for i, q in enumerate(queries) if i % dist.get_world_size() == dist.get_rank()]
    latencies = Latencies()
    for q in mine:
        latencies.update(q.seconds)
    mrr = RetrievalMRR()
    for docs, relevant, ids in DataLoader(dataset, sampler=DistributedSampler(dataset), batch_size=8):
        mrr.update(model(docs), relevant, indexes=ids)
    return mrr.compute(), latencies.compute()
