"""ado's SFTTrainer wrapper: the time-budget early stop (`stop_after_seconds`) is decided by every worker on its
own clock, so the workers leave the training loop at different steps.

Source: IBM/ado PR #41 ("fix: configuring Trainer to exit a training job early", 2025-09): "This PR has workers
with local-rank 0 decide when to early-stop the training based on the measurements configuration (currently,
`stop_after_seconds` and `auto_stop_method`). When all local-rank 0 workers agree, all workers stop training.
The code uses a reduce operation to implement the above." Modelled: the TrainerCallback in
plugins/actuators/sfttrainer/.../wrapper_fms_hf_tuning/scripts/wrapper_sfttrainer.py (`on_train_begin` starts
the clock, `on_step_end` sets `control.should_training_stop`), and HF Trainer's inner loop under DDP, which
breaks after the step that set the flag and then waits for everyone before saving. The failure (workers
stopping at different steps) is what the PR's agreement step removes; the PR does not quote a traceback.

Rank 1 reaches `on_train_begin` 0.8 s before rank 0 (rank 0 is still preparing the dataset), so with a 1.5 s
budget and ~0.2 s steps rank 1's clock runs out about four steps before rank 0's: rank 1 leaves the loop and
waits for everyone before saving, rank 0 is in its next backward's gradient all-reduce.

The bug: `should_training_stop` is set from the rank's own elapsed time.
"""

import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
        elapsed = time.monotonic() - self.start
        if elapsed > self.stop_after_seconds:
            control.should_training_stop = True  # BUG


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
        loss.backward()  # WAITS
        optimizer.step()
        time.sleep(0.2)  # the rest of a training step
        callback.on_step_end(step, control)
        if control.should_training_stop:
            break
    dist.barrier()  # wait_for_everyone before save_model  # WAITS
    return step


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    steps = train(rank, model, StopAfterSecondsCallback(stop_after_seconds=1.5))  # WAITS
    print(f"rank {rank}: stopped after {steps} steps (time budget reached)", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
