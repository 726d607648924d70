# Metrics whose list states torchmetrics gathers one element at a time (dist_reduce_fx=None: only "cat"
# lists are concatenated before the gather), updated once per batch of a per-rank list whose length differs
# between ranks: compute() makes a barrier and one or two all_gathers per update, so the ranks make different numbers of them.
# Models torchmetrics' retrieval metrics (Lightning-AI/torchmetrics src/torchmetrics/retrieval/base.py:
# indexes, preds and target are list states with dist_reduce_fx=None, one element per update) and a custom
# metric keeping raw values as the "Implementing a Metric" page describes (docs/source/pages/implement.rst),
# written here.
# expect: 34 rank-dependent-loop mrr.compute
# expect: 34 rank-dependent-loop latencies.compute
import torch
import torch.distributed as dist
from torchmetrics import Metric
from torchmetrics.retrieval import RetrievalMRR


class Latencies(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("values", default=[])

    def update(self, seconds):
        self.values.append(seconds)

    def compute(self):
        return torch.cat(self.values).median()


def evaluate(model, queries):
    mine = [q for i, q in enumerate(queries) if i % dist.get_world_size() == dist.get_rank()]
    mrr, latencies = RetrievalMRR(), Latencies()
    for q in mine:
        mrr.update(model(q.docs), q.relevant, indexes=q.ids)
        latencies.update(q.seconds)
    return mrr.compute(), latencies.compute()
