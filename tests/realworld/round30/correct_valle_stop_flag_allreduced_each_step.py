"""VALL-E's trainer with the stop flag all-reduced every step: every rank leaves the epoch together.

Models: lifeiteng/vall-e PR #93 ("Fix MetricsTracker"), the fix for the hang where the rank whose loader ran
out first entered ``compute_validation_loss`` and its ``tot_loss.reduce`` while the others still trained: "I
all_gather stop_iteration status from all ranks, if any of them stops, then stop all the ranks." Code modelled
(written here, not copied): ``valle/bin/trainer.py`` ``train_one_epoch``, icefall's ``MetricsTracker.reduce``,
a duration-capped (lhotse-style) bucketing sampler that gives each rank its own number of batches.

2 ranks, 12 cuts each: rank 0's pack into 6 batches, rank 1's into 7. Before each step both ranks all-reduce
(MAX) "my loader is empty"; at rank 0's 7th fetch the flag is set, both leave after 6 steps and reduce the
validation loss together (rank 1's 7th batch is dropped, as in the PR).
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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
        dist.all_reduce(t)
        for k, v in zip(keys, t.tolist()):
            self[k] = v


def compute_validation_loss(model, valid_batches):
    tot = MetricsTracker(loss=0.0, frames=0.0)
    with torch.no_grad():
        for x, y in valid_batches:
            loss = nn.functional.mse_loss(model.module(x), y, reduction="sum")
            tot["loss"] += loss.item()
            tot["frames"] += x.shape[0]
    tot.reduce()
    return tot["loss"] / tot["frames"]


def train_one_epoch(model, optimizer, train_dl, valid_batches, rank):
    model.train()
    it = iter(train_dl)
    batch_idx = 0
    while True:
        batch = next(it, None)
        stop = torch.tensor([1 if batch is None else 0])
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            break
        batch_idx += 1
        x, y = batch
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"[rank {rank}] epoch done after {batch_idx} batches", flush=True)
    model.eval()
    valid_loss = compute_validation_loss(model, valid_batches)
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
    valid_loss = train_one_epoch(model, optimizer, train_dl, valid_batches, rank)
    if rank == 0:
        print(f"valid loss {valid_loss:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
