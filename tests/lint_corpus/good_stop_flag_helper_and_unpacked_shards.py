# Early stopping decided on rank 0 and broadcast by a helper called straight in the loop's `if` (the stop-flag
# broadcast of Lightning's strategy.broadcast and accelerate's broadcast; the loss reduced to rank 0 as in
# maskrcnn-benchmark's reduce_loss_dict), and per-rank shards of a fixed size unpacked from a tuple a helper
# returns: every rank leaves the loop in the same epoch and runs the inner loop as often. Written here.
# expect: none
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def make_shards(rank):
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(32, 4, generator=g)
    xv = torch.randn(16, 4, generator=g)
    return (x, x.sum(1, keepdim=True)), (xv, xv.sum(1, keepdim=True))


def should_stop(val_loss, rank):
    stop = torch.zeros(1, dtype=torch.int32)
    if rank == 0 and val_loss < 0.1:
        stop.fill_(1)
    dist.broadcast(stop, src=0)
    return bool(stop.item())


def train(epochs=10):
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    (x, y), (xv, yv) = make_shards(rank)
    for epoch in range(epochs):
        for i in range(0, len(x), 8):
            torch.nn.functional.mse_loss(model(x[i : i + 8]), y[i : i + 8]).backward()
        stats = torch.stack([torch.nn.functional.mse_loss(model(xv), yv).detach(), torch.tensor(1.0)])
        dist.reduce(stats, dst=0)
        if should_stop((stats[0] / stats[1]).item(), rank):
            break
