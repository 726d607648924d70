"""ReduceLROnPlateau stepped with the all-reduced validation loss, training stopped once the LR falls below a floor.

Models: Project-MONAI/tutorials PR #1461 (fixing issue #1458: "Reduce ... val loss across ranks for DDP"),
rmchurch/disruptcnn issue #3 (the scheduler must see the global loss, not the local one), and fairseq's
``fairseq_cli/train.py`` main loop (``while lr > cfg.optimization.stop_min_lr and ...``; the validation loss handed
to ``trainer.lr_step`` is the one aggregated over workers), with ``torch.optim.lr_scheduler.ReduceLROnPlateau``.

What it does: two ranks train a small DDP regressor. After each epoch each rank evaluates its own validation shard
(rank 1's comes from a drifted domain and gets worse as the model fits), the sum of squared errors and the row
count are all-reduced, and every rank steps ``ReduceLROnPlateau(patience=1, factor=0.1)`` with the same global
mean. The learning rates therefore stay equal, every rank leaves the ``while lr > STOP_MIN_LR`` loop after the same
epoch, and all meet in the final barrier. Correct.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

LR = 0.05
STOP_MIN_LR = 1e-3
MAX_EPOCH = 15


def make_shards(rank, world):
    g = torch.Generator().manual_seed(7)
    w = torch.randn(8, 1, generator=g)
    x = torch.randn(64 * world, 8, generator=g)
    y = x @ w
    vx = torch.randn(32 * world, 8, generator=g)
    vy = vx @ w
    # rows i % world == 1 (rank 1's validation shard) come from a drifted domain (stand-in for a harder split):
    # their targets move away from what the training data teaches
    drifted = torch.arange(32 * world) % world == 1
    vy[drifted] = -0.5 * vy[drifted]
    return x[rank::world], y[rank::world], vx[rank::world], vy[rank::world]


@torch.no_grad()
def evaluate(model, vx, vy):
    stats = torch.tensor([F.mse_loss(model.module(vx), vy, reduction="sum").item(), float(vy.numel())])
    dist.all_reduce(stats)
    return (stats[0] / stats[1]).item()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.1, patience=1)
    x, y, vx, vy = make_shards(rank, world)
    epoch, lr = 0, opt.param_groups[0]["lr"]
    while lr > STOP_MIN_LR and epoch < MAX_EPOCH:
        for i in range(0, len(x), 16):
            loss = F.mse_loss(model(x[i:i + 16]), y[i:i + 16])
            opt.zero_grad()
            loss.backward()
            opt.step()
        val_loss = evaluate(model, vx, vy)
        scheduler.step(val_loss)
        lr = opt.param_groups[0]["lr"]
        print(f"rank {rank} epoch {epoch}: val {val_loss:.4f} lr {lr:.0e}")
        epoch += 1
    dist.barrier()
    if rank == 0:
        print(f"finished after {epoch} epochs")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
