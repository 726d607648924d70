"""ado's SFTTrainer wrapper, fixed: the `stop_after_seconds` early stop is decided by the local-rank 0 workers
and agreed with a reduce, so every worker leaves the training loop after the same step.

Source: IBM/ado PR #41 ("fix: configuring Trainer to exit a training job early", 2025-09): "workers with
local-rank 0 decide when to early-stop ... When all local-rank 0 workers agree, all workers stop training. The
code uses a reduce operation." Modelled: the wrapper's TrainerCallback (`on_train_begin`, `on_step_end`) inside
HF Trainer's DDP loop, followed by the wait-for-everyone before saving. Rank 1 still starts its clock 0.8 s
before rank 0.
"""

import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class Control:
    should_training_stop = False


class StopAfterSecondsCallback:
    def __init__(self, stop_after_seconds):
        self.stop_after_seconds = stop_after_seconds
        self.start = None

    def on_train_begin(self):
        self.start = time.monotonic()

    def on_step_end(self, step, control):
        # The PR: local-rank 0 workers decide, every worker joins a reduce, and all stop once all of the
        # local-rank 0 workers agree.
        local_rank = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
        wants_stop = local_rank == 0 and time.monotonic() - self.start > self.stop_after_seconds
        votes = torch.tensor([float(wants_stop), float(local_rank == 0)])
        dist.all_reduce(votes)
        if votes[0] == votes[1]:
            control.should_training_stop = True


def train(rank, model, callback, max_steps=40):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    control = Control()
    if rank == 0:
        time.sleep(0.8)  # rank 0 still tokenising the dataset when rank 1 starts its clock
    callback.on_train_begin()
    gen = torch.Generator().manual_seed(rank)
    step = 0
    for step in range(1, max_steps + 1):
        x = torch.randn(8, 16, generator=gen)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep(0.2)  # the rest of a training step
        callback.on_step_end(step, control)
        if control.should_training_stop:
            break
    dist.barrier()  # wait_for_everyone before save_model
    return step


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    steps = train(rank, model, StopAfterSecondsCallback(stop_after_seconds=1.5))
    print(f"rank {rank}: stopped after {steps} steps (time budget reached)", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
