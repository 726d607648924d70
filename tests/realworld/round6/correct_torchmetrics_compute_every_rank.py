"""Plain DDP training with a torchmetrics ``MetricCollection`` updated and computed on every rank.

Modelled on the fix discussed in Lightning-AI/torchmetrics issue #938 (every process runs the test loop on its
shard and calls ``compute()``, which all-gathers the metric states; only the printing is rank 0's) and the
torchmetrics "Metrics and distributed computations" docs (``sync_on_compute=True`` by default). Written here
with the installed torchmetrics, a tiny classifier and data built in code.

Looks suspicious: the evaluation data differ per rank (``rank::world`` shards, of different lengths: 33 rows
over 2 ranks) and the result is used under ``if rank == 0``, but ``compute()`` — the call that synchronises —
is made on every rank, and the metric states are padded and gathered by torchmetrics whatever their size.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20
REQUIRES = ("torchmetrics",)


def make_data(n, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=gen)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()  # 3 classes
    return x, y


def test(model, x, y, metrics):
    model.eval()
    with torch.no_grad():
        for start in range(0, x.shape[0], 8):
            preds = model(x[start:start + 8]).argmax(dim=1)
            metrics.update(preds, y[start:start + 8])
    return metrics.compute()


def worker():
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torchmetrics import MetricCollection
    from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(5, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = make_data(64, seed=1)
    xs, ys = x[rank::world], y[rank::world]
    for epoch in range(3):
        for start in range(0, xs.shape[0], 8):
            loss = torch.nn.functional.cross_entropy(model(xs[start:start + 8]), ys[start:start + 8])
            opt.zero_grad()
            loss.backward()
            opt.step()
    metrics = MetricCollection([MulticlassAccuracy(num_classes=3), MulticlassF1Score(num_classes=3)])
    tx, ty = make_data(33, seed=2)
    results = test(model.module, tx[rank::world], ty[rank::world], metrics)
    if rank == 0:
        print({k: round(float(v), 3) for k, v in results.items()})
    return {k: float(v) for k, v in results.items()}


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
