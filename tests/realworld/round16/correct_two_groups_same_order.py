"""Two process groups, and every rank makes its end-of-epoch collectives on them in the same order.

Models: meta-pytorch/torchrec PR #4149 (collectives on two process groups must be issued in the same order on every
rank); run-ai/runai-model-streamer issue #165 ("all shared ranks must issue collectives on A and B in the exact same
sequence"); detectron2 ``utils/comm.py`` (object ``all_gather`` on a separate gloo group), the second group this
learner script creates the same way.

What it does: 2 ranks train a small classifier under DDP on the default group; at startup every rank also creates
``obj_group = dist.new_group(backend="gloo")``. At the end of each of 3 epochs every rank first all-reduces the
training statistics on the default group (rank 0 prints them) and then gathers the validation predictions with
``all_gather_object`` on ``obj_group``; the order is the same on both ranks, so both collectives complete. A final
barrier ends the run.
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


def make_split(rank, world_size, n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = (x[:, 0] * x[:, 1] > 0).long()
    return x[rank::world_size], y[rank::world_size]


def reduce_train_stats(loss_sum, count):
    stats = torch.tensor([loss_sum, float(count)])
    dist.all_reduce(stats)
    return stats[0].item() / stats[1].item()


def gather_predictions(model, x, obj_group):
    with torch.no_grad():
        preds = model.module(x).argmax(1).tolist()
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, preds, group=obj_group)
    return [p for part in gathered for p in part]


def end_of_epoch(epoch, rank, model, loss_sum, count, val, obj_group):
    train_loss = reduce_train_stats(loss_sum, count)  # every rank, same place, before validation
    if rank == 0:
        print(f"epoch {epoch} train loss {train_loss:.3f}", flush=True)
    return gather_predictions(model, val[0], obj_group)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    obj_group = dist.new_group(backend="gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = make_split(rank, world_size, 128, seed=0)
    val = make_split(rank, world_size, 32, seed=1)
    for epoch in range(3):
        loss_sum, count = 0.0, 0
        for i in range(0, len(x), 16):
            loss = F.cross_entropy(model(x[i:i + 16]), y[i:i + 16])
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum, count = loss_sum + loss.item(), count + 1
        preds = end_of_epoch(epoch, rank, model, loss_sum, count, val, obj_group)
        if rank == 0:
            print(f"epoch {epoch}: {len(preds)} validation predictions gathered", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
