"""Modelled on lhotse's dynamic bucketing samplers in distributed mode (lhotse-speech/lhotse PR #695 "Fix
samplers dropping cuts when world_size > 1": with ``drop_last=False`` "some nodes might see one batch less than
the others"; PR #1277 "Last mini-batch redistribution": "to prevent training/validation loops hanging in
multi-GPU setups") and on the VALL-E trainer that used them (lifeiteng/vall-e PR #131 "Set ddp_sampler
drop_last=True ... to avoid different number of batches on multiple gpus"), with gradient accumulation under
DDP ``no_sync`` as in fairseq's trainer / speechbrain's ``fit_batch`` (speechbrain PR #1449).

The sampler forms duration-capped batches over the whole (shared-seed shuffled) cut list and deals them out
round-robin, so with ``drop_last=False`` rank 0 gets 3 batches and rank 1 gets 2. The accumulation rule syncs on
every second micro-batch *or on the rank's own last batch*: rank 0 syncs twice, rank 1 once. Rank 1 leaves the
epoch; rank 0 goes on to a third micro-batch, and its collectives have no partner. (The first to wait is not
the extra gradient all-reduce but DDP's one-off bucket rebuild — a broadcast made in ``forward()`` of the first
iteration after the first synchronised backward — which rank 1, out of batches, never reaches.)
"""

import contextlib
import random
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


def make_cuts(n=10, seed=0):
    rng = random.Random(seed)
    return [{"id": f"cut-{i}", "duration": rng.choice([2.0, 3.0, 4.0, 5.0])} for i in range(n)]


class DynamicBucketingSampler:
    """Duration-capped batches over all cuts, dealt round-robin to the ranks (lhotse's scheme, written anew)."""

    def __init__(self, cuts, max_duration, world_size, rank, seed=0, drop_last=False):
        self.cuts, self.max_duration = cuts, max_duration
        self.world_size, self.rank, self.seed, self.drop_last = world_size, rank, seed, drop_last

    def _global_batches(self):
        cuts = sorted(self.cuts, key=lambda c: c["duration"])  # one bucket is enough here
        random.Random(self.seed).shuffle(cuts)  # the same seed on every rank
        batches, batch, total = [], [], 0.0
        for cut in cuts:
            if batch and total + cut["duration"] > self.max_duration:
                batches.append(batch)
                batch, total = [], 0.0
            batch.append(cut)
            total += cut["duration"]
        if batch:
            batches.append(batch)
        if self.drop_last:
            batches = batches[: len(batches) - len(batches) % self.world_size]
        return batches

    def __iter__(self):
        return iter(self._global_batches()[self.rank::self.world_size])

    def __len__(self):
        return len(self._global_batches()[self.rank::self.world_size])


def collate(batch, generator):
    frames = [int(c["duration"] * 4) for c in batch]
    x = torch.randn(sum(frames), 16, generator=generator)
    return x, torch.randn(sum(frames), 4, generator=generator)


def train_one_epoch(model, optimizer, sampler, accum_grad, generator):
    model.train()
    num_batches = len(sampler)
    for batch_idx, batch in enumerate(sampler):
        x, y = collate(batch, generator)
        is_update = (batch_idx + 1) % accum_grad == 0 or batch_idx == num_batches - 1
        context = contextlib.nullcontext() if is_update else model.no_sync()
        with context:
            loss = torch.nn.functional.mse_loss(model(x), y) / accum_grad  # WAITS
            loss.backward()
        if is_update:
            optimizer.step()
            optimizer.zero_grad()
    return num_batches


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    sampler = DynamicBucketingSampler(make_cuts(), max_duration=10.0, world_size=world_size, rank=rank,
                                      drop_last=False)  # BUG
    generator = torch.Generator().manual_seed(rank)
    n = train_one_epoch(model, optimizer, sampler, accum_grad=2, generator=generator)  # WAITS
    print(f"rank {rank}: epoch done after {n} batches")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
