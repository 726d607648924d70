"""A ``MeanMetric`` whose all-reduce tensor has a pinned dtype, whatever type the accumulated state became.

Modelled on modelscope/ms-swift PR #9551 (fix for issue #9550: "Pinning the tensor to float64 makes every rank
reduce with the same dtype regardless of ``self.state``'s runtime type"; float64 also keeps ``count`` exact).
Written here: a token-accuracy metric over tiny prediction/label tensors built in code; rank 1's multi-token
answers take the sequence-level path, whose ``numpy.bool_`` values turn its state into ``numpy.float64``.

Looks suspicious: the ranks accumulate different Python/numpy types (a ``float`` on rank 0, a
``numpy.float64`` on rank 1) and take different branches in ``compute_acc``, but the tensor that is reduced is
built with ``dtype=torch.float64`` on every rank, so the all-reduce has one size and one dtype everywhere.
"""

from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

KIND = "correct"
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
        tensor = torch.tensor([self.state, self.count], dtype=torch.float64)
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(tensor)
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
    return metric.compute()


def worker():
    acc = evaluate(make_batches(dist.get_rank()))
    if dist.get_rank() == 0:
        print(f"acc {acc:.3f}")
    return acc


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
