"""A ``MeanMetric`` whose all-reduce tensor takes its dtype from whatever the accumulated state became.

Modelled on modelscope/ms-swift PR #9551 / issue #9550 (``swift/metrics/utils.py`` ``MeanMetric.compute()``
builds ``torch.tensor([self.state, self.count])`` with an inferred dtype; sequence-level accuracy appends
``np.all(...)``, a ``numpy.bool_``, which promotes ``self.state`` to ``numpy.float64`` "on the ranks that take
that path", so those ranks all-reduce float64 while the others all-reduce float32, "and the collective hangs").
Written here: a token-accuracy metric over tiny prediction/label tensors built in code; a rank switches to the
sequence-level path when its batch holds multi-token answers, which only rank 1's data do.

Bug: ``torch.tensor([self.state, self.count])`` without a dtype. Rank 0 reduces 2 float32 values, rank 1 2
float64 values (16 bytes against 32) in the same all-reduce.
"""

from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


class MeanMetric:
    def __init__(self):
        self.state = 0.0
        self.count = 0

    def update(self, values):
        for value in values:
            self.state += value
            self.count += 1

    def compute(self):
        tensor = torch.tensor([self.state, self.count])  # BUG
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(tensor)  # WAITS
        state, count = tensor.tolist()
        return state / max(count, 1.0)


def compute_acc(preds, labels):
    """Token accuracy for one-token answers (python floats), sequence accuracy otherwise (numpy bools)."""
    preds, labels = preds.numpy(), labels.numpy()
    if labels.shape[1] == 1:
        return [float(p[0] == l[0]) for p, l in zip(preds, labels)]
    return [np.all(p == l) for p, l in zip(preds, labels)]


def make_batches(rank):
    gen = torch.Generator().manual_seed(7 + rank)
    width = 1 if rank == 0 else 3  # rank 1's shard holds the multi-token answers
    batches = []
    for _ in range(3):
        labels = torch.randint(0, 4, (4, width), generator=gen)
        noise = torch.randint(0, 4, (4, width), generator=gen)
        preds = torch.where(torch.rand(4, width, generator=gen) < 0.7, labels, noise)
        batches.append((preds, labels))
    return batches


def evaluate(batches):
    metric = MeanMetric()
    for preds, labels in batches:
        metric.update(compute_acc(preds, labels))
    return metric.compute()  # WAITS


def worker():
    acc = evaluate(make_batches(dist.get_rank()))  # WAITS
    if dist.get_rank() == 0:
        print(f"acc {acc:.3f}")
    return acc


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
