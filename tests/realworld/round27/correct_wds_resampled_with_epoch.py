"""A WebDataset training pipeline that resamples shards on every rank and fixes the epoch length with
``with_epoch``; the shard count (5) does not divide by the 2 ranks and the ranks draw different shards, yet every
rank yields exactly 5 batches per epoch.

Models: the pipeline webdataset's maintainers recommend for DDP (webdataset issues #250, #434 and #444:
``WebDataset(urls, resampled=True) ... .with_epoch(n)``; ``ResampledShards`` in ``shardlists.py``,
``with_epoch`` in ``pipeline.py``); open_clip's ``get_wds_dataset`` (``ResampledShards2`` with
``--dataset-resampled``; ``with_epoch(num_worker_batches)`` for training, "to get same number of full batches on
each node").

What it does: 2 ranks train a tiny classifier (DDP) for one epoch over a pipeline built from ``_helpers_wds``
stages (resampled shards -> samples -> batches of 4 -> ``with_epoch(5)``); at the end of the epoch the ranks
all-reduce the summed loss for the log line.

Why it is right although it looks rank-dependent: the shard stream is seeded per rank and endless, so nothing
about it is the same on the ranks except that ``with_epoch`` cuts every rank's pass at the same number of batches;
each rank makes 5 DDP steps and then the one all-reduce.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import _helpers_wds as wds

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_SHARDS = 5
BATCH_SIZE = 4
BATCHES_PER_EPOCH = 5  # (5 shards x 8 samples) / (2 ranks x 4 per batch), rounded up


def make_pipeline():
    return wds.DataPipeline(
        wds.ResampledShards(wds.shard_urls(NUM_SHARDS), seed=0),
        wds.tarfile_samples,
        wds.batched(BATCH_SIZE),
    ).with_epoch(BATCHES_PER_EPOCH)


def train_one_epoch(model, optimizer, pipeline):
    total, steps = torch.zeros(2), 0
    for x, y in pipeline:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += torch.tensor([loss.item(), 1.0])
        steps += 1
    dist.all_reduce(total)
    return total[0].item() / total[1].item(), steps


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    pipeline = make_pipeline()
    mean_loss, steps = train_one_epoch(model, optimizer, pipeline)
    print(f"[rank {rank}] epoch 0: {steps} steps, mean loss {mean_loss:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
