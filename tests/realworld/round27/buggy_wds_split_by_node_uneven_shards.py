"""A WebDataset training pipeline that splits the shard list between the ranks with ``split_by_node``; 5 shards
on 2 ranks give the ranks 3 and 2 shards, i.e. 6 and 4 batches per epoch.

Models: webdataset's ``DataPipeline(SimpleShardList(urls), split_by_node, split_by_worker, tarfile_samples,
..., batched(n))`` (webdataset ``README`` / ``pipeline.py``, ``shardlists.py``) and the maintainers' answers in
webdataset issues #225 ("all processes need to receive the same number of mini-batches or they won't be able to
synchronize"), #250 and #434 ("the number of nodes and workers usually doesn't divide the number of shards evenly
... you end up with different numbers of training samples on different nodes"); open_clip-style training loops
that iterate such a pipeline once per epoch with DDP.

What it does: 2 ranks train a tiny classifier (DDP) for one epoch over a pipeline built from
``_helpers_wds`` stages (shard list -> split by node -> samples -> batches of 4); 8 samples per shard; at the end
of the epoch the ranks all-reduce the summed loss for the log line.

The bug: ``split_by_node`` hands out whole shards, so rank 0 gets shards 0, 2, 4 (6 batches) and rank 1 shards 1,
3 (4 batches). Rank 1 leaves the loop after 4 steps and enters the epoch-end loss all-reduce while rank 0 is in
its 5th ``loss.backward()`` (DDP's gradient all-reduce); nothing in the training loop looks rank-dependent --
the difference comes from the shard count, through a generator stage in another module.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import _helpers_wds as wds

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_SHARDS = 5
BATCH_SIZE = 4


def make_pipeline():
    return wds.DataPipeline(
        wds.SimpleShardList(wds.shard_urls(NUM_SHARDS)),
        wds.split_by_node,  # BUG
        wds.tarfile_samples,
        wds.batched(BATCH_SIZE),
    )


def train_one_epoch(model, optimizer, pipeline):
    total, steps = torch.zeros(2), 0
    for x, y in pipeline:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        total += torch.tensor([loss.item(), 1.0])
        steps += 1
    dist.all_reduce(total)  # WAITS
    return total[0].item() / total[1].item(), steps


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    pipeline = make_pipeline()
    mean_loss, steps = train_one_epoch(model, optimizer, pipeline)  # WAITS
    print(f"[rank {rank}] epoch 0: {steps} steps, mean loss {mean_loss:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
