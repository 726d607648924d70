"""Early stopping decided on rank 0 from a loss reduced to rank 0, the decision broadcast to every rank.

Modelled on the ``reduce_loss_dict`` helper of facebookresearch/maskrcnn-benchmark
(``maskrcnn_benchmark/engine/trainer.py``: ``dist.reduce(all_losses, dst=0)``; "only main process gets
accumulated, so only divide by world_size in this case") and on the usual remedy for a decision that only one
rank can make: the main process decides, ``dist.broadcast`` carries the flag (the pattern of Lightning's
``strategy.broadcast`` / accelerate's ``broadcast`` of a stop flag). ``torch.distributed.reduce`` documents that
only ``dst`` receives the result; pytorch/pytorch issue #76527 shows what the other ranks hold on gloo.

Correct, though it looks suspicious: rank 1's copy of the reduced statistics is garbage (its own partial sum)
and the stop rule runs under ``if rank == 0``; but rank 1 never reads the value, and every rank leaves the loop
in the same epoch because the flag comes from one broadcast that all of them make.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

TARGET_VAL_LOSS = 0.60
MAX_EPOCHS = 12


def make_shards(rank):
    g = torch.Generator().manual_seed(100 + rank)
    w_true = torch.tensor([[1.0], [-2.0], [0.5], [1.5]])
    x = torch.randn(32, 4, generator=g)
    y = x @ w_true + 0.1 * torch.randn(32, 1, generator=g)
    xv = torch.randn(16, 4, generator=g)
    # rank 1's validation shard comes from a noisier source (a stand-in for a harder domain)
    noise = 0.2 if rank == 0 else 0.9
    yv = xv @ w_true + noise * torch.randn(16, 1, generator=g)
    return (x, y), (xv, yv)


def reduce_val_loss(model, xv, yv):
    """Sum and count over the shard, reduced to rank 0; the value is meaningful on rank 0 only."""
    with torch.no_grad():
        err = torch.nn.functional.mse_loss(model(xv), yv, reduction="sum")
        stats = torch.stack([err, torch.tensor(float(len(xv)))])
        dist.reduce(stats, dst=0)
    return (stats[0] / stats[1]).item()


def should_stop(val_loss, rank):
    stop = torch.zeros(1, dtype=torch.int32)
    if rank == 0 and val_loss < TARGET_VAL_LOSS:
        stop.fill_(1)
    dist.broadcast(stop, src=0)
    return bool(stop.item())


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    (x, y), (xv, yv) = make_shards(rank)
    epoch = 0
    for epoch in range(MAX_EPOCHS):
        for i in range(0, len(x), 8):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x[i:i + 8]), y[i:i + 8])
            loss.backward()
            opt.step()
        val_loss = reduce_val_loss(model, xv, yv)
        if should_stop(val_loss, rank):
            break
    dist.barrier()
    if rank == 0:
        print(f"stopped after epoch {epoch}: val loss {val_loss:.3f}")
    assert epoch < MAX_EPOCHS - 1, "the target was never reached"


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
