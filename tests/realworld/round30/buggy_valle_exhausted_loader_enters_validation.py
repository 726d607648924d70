"""VALL-E's trainer: the rank whose bucketed loader runs out first goes on to the validation loss reduce.

Models: lifeiteng/vall-e PR #93 ("Fix MetricsTracker"): "one rank first consumes its data loader, and then
enters the ``compute_validation_loss`` function and stuck on the ``tot_loss.reduce(loss.device)`` statement. At
the same time other ranks are still training the next batch and trying to wait for this rank." The batches come
from lhotse's duration-bucketing sampler, which gives each rank its own number of batches per epoch; the
PR's fix all-gathers a stop-iteration flag every step and stops every rank as soon as one is out of data.
Code modelled (written here, not copied): ``valle/bin/trainer.py`` ``train_one_epoch`` (the loop over
``train_dl``, DDP backward, then ``compute_validation_loss``), icefall's ``MetricsTracker.reduce`` (an
``all_reduce`` of the summed loss and frame counts).

2 ranks, 12 cuts each, a 40-frame budget per batch: rank 0's cuts pack into 6 batches, rank 1's (longer) into 7.
Rank 0 leaves the loop after 6 batches and all-reduces the validation tracker; rank 1 is in its 7th batch's DDP
backward.
Bug: the epoch loop ends on the rank's own loader (BUG). Waiting: rank 0 in ``reduce`` (WAITS), rank 1 in
``backward`` (WAITS).
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

FEAT = 8
MAX_FRAMES_PER_BATCH = 40


def cut_durations(rank):
    # utterance lengths (frames) of this rank's shard; rank 1's cuts are longer, so they make more batches
    g = torch.Generator().manual_seed(100 + rank)
    n = 12
    lo, hi = (10, 19) if rank == 0 else (12, 22)
    return torch.randint(lo, hi, (n,), generator=g).tolist()


def bucketing_sampler(durations):
    # a duration-capped batch sampler (lhotse DynamicBucketingSampler-like): batches of cuts up to the frame budget
    batch, frames = [], 0
    for d in sorted(range(len(durations)), key=lambda j: durations[j]):
        if frames + durations[d] > MAX_FRAMES_PER_BATCH and batch:
            yield batch
            batch, frames = [], 0
        batch.append(d)
        frames += durations[d]
    if batch:
        yield batch


def make_batch(indices, durations, g):
    frames = sum(durations[i] for i in indices)
    x = torch.randn(frames, FEAT, generator=g)
    y = torch.randn(frames, FEAT, generator=g)
    return x, y


class MetricsTracker(dict):
    def reduce(self):
        keys = sorted(self)
        t = torch.tensor([float(self[k]) for k in keys])
        dist.all_reduce(t)  # WAITS
        for k, v in zip(keys, t.tolist()):
            self[k] = v


def compute_validation_loss(model, valid_batches):
    tot = MetricsTracker(loss=0.0, frames=0.0)
    with torch.no_grad():
        for x, y in valid_batches:
            loss = nn.functional.mse_loss(model.module(x), y, reduction="sum")
            tot["loss"] += loss.item()
            tot["frames"] += x.shape[0]
    tot.reduce()  # WAITS
    return tot["loss"] / tot["frames"]


def train_one_epoch(model, optimizer, train_dl, valid_batches, rank):
    model.train()
    batch_idx = 0
    for batch_idx, (x, y) in enumerate(train_dl):  # BUG
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
    print(f"[rank {rank}] epoch done after {batch_idx + 1} batches", flush=True)
    model.eval()
    valid_loss = compute_validation_loss(model, valid_batches)  # WAITS
    model.train()
    return valid_loss


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(FEAT, 16), nn.ReLU(), nn.Linear(16, FEAT)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    durations = cut_durations(rank)
    g = torch.Generator().manual_seed(rank)
    train_dl = [make_batch(b, durations, g) for b in bucketing_sampler(durations)]
    valid_batches = [(torch.randn(20, FEAT, generator=g), torch.randn(20, FEAT, generator=g))]
    valid_loss = train_one_epoch(model, optimizer, train_dl, valid_batches, rank)  # WAITS
    if rank == 0:
        print(f"valid loss {valid_loss:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
