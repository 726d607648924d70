"""A Megatron-style timer with ``barrier=True`` started inside a rank-0-only block (buggy).

Models NVIDIA/Megatron-LM ``megatron/core/timers.py`` (``Timer.start(barrier=False)`` / ``stop(barrier=False)``
call ``torch.distributed.barrier(group=self._barrier_group)`` first when ``barrier`` is true; ``Timers.__call__``
creates timers by name) and ``megatron/training/training.py`` (``timers('save-checkpoint',
log_level=0).start(barrier=True)`` around ``save_checkpoint``, which every rank calls). The timers are a minimal
stand-in with the same calls.

A learner's DDP training loop copies those timers and, every ``SAMPLE_EVERY`` steps, times the sample
generation the way Megatron times a checkpoint save, ``start(barrier=True)``.

Bug: the sample generation is rank 0's work, and the learner put the whole timed region, timer calls included,
under ``if rank == 0``. The timer's barrier is a collective of the default group: rank 0 waits in it at
iteration 3 while rank 1 has gone on to iteration 4's gradient all-reduce in ``loss.backward()``.
"""
import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

SAMPLE_EVERY = 3


class Timer:
    def __init__(self, name):
        self.name = name
        self._elapsed = 0.0
        self._started = False
        self._start_time = 0.0
        self._barrier_group = None

    def start(self, barrier=False):
        assert not self._started, "timer has already been started"
        if barrier:
            dist.barrier(group=self._barrier_group)  # WAITS
        self._start_time = time.time()
        self._started = True

    def stop(self, barrier=False):
        assert self._started, "timer is not started"
        if barrier:
            dist.barrier(group=self._barrier_group)
        self._elapsed += time.time() - self._start_time
        self._started = False

    def elapsed(self, reset=True):
        value = self._elapsed
        if reset:
            self._elapsed = 0.0
        return value


class Timers:
    def __init__(self):
        self._timers = {}

    def __call__(self, name):
        if name not in self._timers:
            self._timers[name] = Timer(name)
        return self._timers[name]


def generate_samples(model, out_dir, iteration):
    model.eval()
    with torch.no_grad():
        samples = model(torch.linspace(-1, 1, 8).reshape(8, 1).repeat(1, 4))
    torch.save(samples, os.path.join(out_dir, f"samples_{iteration}.pt"))
    model.train()


def shared_out_dir():
    box = [tempfile.mkdtemp(prefix="r15_timers_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def worker():
    rank = dist.get_rank()
    out_dir = shared_out_dir()
    timers = Timers()
    try:
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        g = torch.Generator().manual_seed(0)
        x = torch.randn(64, 4, generator=g)
        dataset = TensorDataset(x, x.pow(2).sum(1, keepdim=True))
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, batch_size=8, sampler=sampler)

        iteration = 0
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for xb, yb in loader:
                loss = nn.functional.mse_loss(model(xb), yb)
                optimizer.zero_grad()
                loss.backward()  # WAITS
                optimizer.step()
                iteration += 1
                if iteration % SAMPLE_EVERY == 0 and rank == 0:  # BUG
                    timers("generate-samples").start(barrier=True)  # WAITS
                    generate_samples(model.module, out_dir, iteration)
                    timers("generate-samples").stop(barrier=True)
                    print(f"iter {iteration}: loss {loss.item():.4f}, samples in "
                              f"{timers('generate-samples').elapsed() * 1000:.1f} ms", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
