"""A rank-0 profiling callback removes itself from the callback list while the handler iterates it.

Models: huggingface/transformers ``trainer_callback.py`` ``CallbackHandler.call_event`` (``for callback in
self.callbacks: result = getattr(callback, event)(...)``); a public HF-Trainer ``ProfCallback`` that profiles a window
of steps and then removes itself with ``self.trainer.callback_handler.callbacks.remove(self)`` from inside its own
event; the Python tutorial's warning about changing a list while looping over it (the element after the removed one
is skipped). The throughput callback follows the usual "all-reduce the per-rank counts, log on rank 0" pattern
(e.g. composer's ``SpeedMonitor``, Lightning's ``ThroughputMonitor``).

What it does: 2 ranks train a small MLP under DDP with a learner's mini trainer built like the HF one (a
``CallbackHandler`` that calls ``on_step_end`` on each callback in turn). Two user callbacks: ``ProfilerCallback``
(rank 0 only: times steps 1-2, reports at step 3 and then removes itself, "to take its overhead away") and
``ThroughputCallback`` (every rank all-reduces the number of samples it processed; rank 0 logs the global rate).

The bug: ``ProfilerCallback.on_step_end`` calls ``callbacks.remove(self)`` on rank 0 while ``call_event`` is looping
over that very list, so the loop skips the element after it: in step 3 rank 0 never calls
``ThroughputCallback.on_step_end``. Rank 1 (where the profiler callback just returns) makes the throughput all-reduce,
rank 0 goes on to step 4, and its DDP gradient all-reduce meets rank 1's 2-element throughput all-reduce: gloo
aborts on the size mismatch on one rank and the other loses its peer.
"""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


class TrainerState:
    def __init__(self, rank):
        self.global_step = 0
        self.is_world_process_zero = rank == 0


class TrainerCallback:
    def on_step_end(self, state, **kwargs):
        pass


class CallbackHandler:
    def __init__(self, callbacks):
        self.callbacks = list(callbacks)

    def call_event(self, event, state, **kwargs):
        for callback in self.callbacks:  # BUG
            getattr(callback, event)(state, **kwargs)  # WAITS

    def on_step_end(self, state, **kwargs):
        self.call_event("on_step_end", state, **kwargs)  # WAITS


class ProfilerCallback(TrainerCallback):
    """Rank 0 times a window of steps (a stand-in for torch.profiler), reports, then removes itself."""

    def __init__(self, trainer, start, end):
        self.trainer, self.start, self.end = trainer, start, end
        self.t0 = None

    def on_step_end(self, state, **kwargs):
        if not state.is_world_process_zero:
            return
        if state.global_step == self.start:
            self.t0 = time.perf_counter()
        elif state.global_step == self.end:
            per_step = (time.perf_counter() - self.t0) / (self.end - self.start)
            print(f"[profiler] {per_step * 1e3:.1f} ms/step over steps {self.start}-{self.end}", flush=True)
            self.trainer.callback_handler.callbacks.remove(self)


class ThroughputCallback(TrainerCallback):
    def __init__(self):
        self.last = time.perf_counter()

    def on_step_end(self, state, batch_size=0, **kwargs):
        counts = torch.tensor([float(batch_size), 1.0])
        dist.all_reduce(counts)  # WAITS
        now = time.perf_counter()
        if state.is_world_process_zero:
            print(f"step {state.global_step}: {counts[0].item() / (now - self.last):.0f} samples/s", flush=True)
        self.last = now


class MiniTrainer:
    def __init__(self, model, dataset, rank):
        self.model = DDP(model)
        self.sampler = DistributedSampler(dataset, shuffle=True, seed=0)
        self.loader = DataLoader(dataset, batch_size=8, sampler=self.sampler)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.state = TrainerState(rank)
        self.callback_handler = CallbackHandler([])

    def add_callback(self, callback):
        self.callback_handler.callbacks.append(callback)

    def train(self, epochs):
        for epoch in range(epochs):
            self.sampler.set_epoch(epoch)
            for x, y in self.loader:
                loss = F.cross_entropy(self.model(x), y)
                self.opt.zero_grad()
                loss.backward()  # WAITS
                self.opt.step()
                self.state.global_step += 1
                self.callback_handler.on_step_end(self.state, batch_size=len(x))  # WAITS


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 10, generator=g)
    dataset = TensorDataset(x, (x[:, :3].sum(1) > 0).long())
    trainer = MiniTrainer(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)), dataset, rank)
    trainer.add_callback(ProfilerCallback(trainer, start=1, end=3))
    trainer.add_callback(ThroughputCallback())
    trainer.train(epochs=2)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
