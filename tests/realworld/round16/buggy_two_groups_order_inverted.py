"""Every rank makes both end-of-epoch collectives, but rank 0 makes them in the other order, on two process groups.

Models: meta-pytorch/torchrec PR #4149 ("rank-divergent collective ordering across two process groups", an
all-to-all on one group and an all-reduce on another, issued in different orders on different ranks: a cross-PG
deadlock); run-ai/runai-model-streamer issue #165 (the "classic" deadlock: rank 0 broadcasts on group A then B, rank 1
on B then A -- "all shared ranks must issue collectives on A and B in the exact same sequence"); Lightning-AI PR
#15195 review (the PyTorch docs' warning on groups); detectron2 ``utils/comm.py`` (``all_gather`` of Python objects on
a separate gloo group, ``_get_global_gloo_group``), the second group this learner script creates the same way.

What it does: 2 ranks train a small classifier under DDP on the default group; at startup every rank also creates an
``obj_group = dist.new_group(backend="gloo")`` for object collectives. At the end of each epoch the script reduces the
training statistics (``all_reduce`` on the default group) and gathers the validation predictions
(``all_gather_object`` on ``obj_group``).

The bug: rank 0 reduces the training statistics *before* validation so that its log line comes out first; the other
ranks reduce them *after* validation (the learner's fix for an earlier hang in which only rank 0 made the reduce). The
same two collectives are made on every rank, but in opposite orders on two different groups: rank 0 waits in the
default group's ``all_reduce`` for rank 1, rank 1 waits in ``obj_group``'s ``all_gather_object`` for rank 0, and both
time out after 20 s.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


def make_split(rank, world_size, n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = (x[:, 0] * x[:, 1] > 0).long()
    return x[rank::world_size], y[rank::world_size]


def reduce_train_stats(loss_sum, count):
    stats = torch.tensor([loss_sum, float(count)])
    dist.all_reduce(stats)  # WAITS
    return stats[0].item() / stats[1].item()


def gather_predictions(model, x, obj_group):
    with torch.no_grad():
        preds = model.module(x).argmax(1).tolist()
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, preds, group=obj_group)  # WAITS
    return [p for part in gathered for p in part]


def end_of_epoch(epoch, rank, model, loss_sum, count, val, obj_group):
    if rank == 0:  # BUG
        train_loss = reduce_train_stats(loss_sum, count)  # WAITS
        print(f"epoch {epoch} train loss {train_loss:.3f}", flush=True)
    preds = gather_predictions(model, val[0], obj_group)  # WAITS
    if rank != 0:
        reduce_train_stats(loss_sum, count)  # every rank has to take part in the reduce
    return preds


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
        preds = end_of_epoch(epoch, rank, model, loss_sum, count, val, obj_group)  # WAITS
        if rank == 0:
            print(f"epoch {epoch}: {len(preds)} validation predictions gathered", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
