"""Early stopping decided on every rank from a loss that ``dist.reduce`` delivered to rank 0 only.

Modelled on the ``reduce_loss_dict`` helper of facebookresearch/maskrcnn-benchmark
(``maskrcnn_benchmark/engine/trainer.py``: ``dist.reduce(all_losses, dst=0)``, then "only main process gets
accumulated, so only divide by world_size in this case") and the scripts that copied it under other names
(``reduce_loss(loss, args)``), with a validation-loss stop rule of the kind every training script has. The
non-destination buffer of a reduce is not the result: pytorch/pytorch issue #76527 ("Non target rank receives
result of 'reduce' op when backend is 'gloo'": partial sums there) and the ``torch.distributed.reduce``
documentation ("Only the process with rank dst is going to receive the final result").

Bug: every rank reads the reduced validation loss and decides whether to stop. Rank 0 holds the mean over
both shards, rank 1 still holds its own (noisier) shard's sum and count, so rank 0 stops after a few epochs
while rank 1 trains on: rank 0 waits in the final barrier, rank 1 in the next epoch's DDP backward.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
    """Sum and count over the shard, reduced to rank 0 (maskrcnn-benchmark's ``reduce_loss_dict`` idiom)."""
    with torch.no_grad():
        err = torch.nn.functional.mse_loss(model(xv), yv, reduction="sum")
        stats = torch.stack([err, torch.tensor(float(len(xv)))])
        dist.reduce(stats, dst=0)
    return (stats[0] / stats[1]).item()


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
            loss.backward()  # WAITS
            opt.step()
        val_loss = reduce_val_loss(model, xv, yv)
        if val_loss < TARGET_VAL_LOSS:  # BUG
            break
    dist.barrier()  # WAITS
    if rank == 0:
        print(f"stopped after epoch {epoch}: val loss {val_loss:.3f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
