"""Plain DDP training with a torchmetrics ``MetricCollection`` evaluated on rank 0 only.

Modelled on Lightning-AI/torchmetrics issue #938 ("Using Module Metrics with PyTorch DDP (without PyTorch
Lightning)": the test function runs only if the process is rank 0, and ``metrics.compute()`` "attempts to
perform a distributed synchronization process across all GPUs (by default, ``torch.distributed.all_gather()``)
... the code just hangs at the compute step until the timeout"); the same shape is in
Lightning-AI/torchmetrics issue #2684 (``on_validation_end`` under ``@rank_zero_only``). Written here with the
installed torchmetrics (``MulticlassAccuracy`` and ``MulticlassF1Score`` in a ``MetricCollection``), a tiny
classifier and data built in code.

Bug: ``test()`` is called under ``if rank == 0``. The metric's ``compute()`` syncs its states with an
all-gather over the default group, which the other rank never joins (it has already gone on to the end of the
script).
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
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
    return metrics.compute()  # WAITS


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
    if rank == 0:
        tx, ty = make_data(32, seed=2)
        results = test(model.module, tx, ty, metrics)  # BUG  # WAITS
        print({k: round(float(v), 3) for k, v in results.items()})


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
