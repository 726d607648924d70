"""sleap-nn: a remote "Stop Early" command reaches rank 0, and a barrier does not carry `should_stop` to the others.

Source: talmolab/sleap-nn PR #471 ("Fix TrainingControllerZMQ DDP stop: use reduce_boolean_decision", 2026-03; the
diagnosis is in talmolab/sleap-rtc PR #49). Modelled: `TrainingControllerZMQ.on_train_batch_end` and Lightning's
fit loop (`trainer.should_stop` checked after each batch, DDP gradient all-reduce in each backward, a barrier at
the end of fit). The PR: "`trainer.strategy.barrier()` synchronises execution position across ranks but does not
propagate the value of `trainer.should_stop`. When a ZMQ stop command arrives: Rank 0 (`is_global_zero`) receives
the message and sets `trainer.should_stop = True`; all ranks reach `barrier()` ...; after the barrier, ranks
diverge: Rank 0 has `should_stop=True` -> exits the training loop", the others run the next step.

The ZMQ socket is a local queue on rank 0 into which the GUI's stop message arrives during step 2. Rank 0 leaves
the loop and waits in the end-of-fit barrier; rank 1 waits in step 3's DDP all-reduce.
"""

from collections import deque
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

MAX_STEPS = 6
STOP_ARRIVES_AT_STEP = 2


class Trainer:
    def __init__(self):
        self.global_rank = dist.get_rank()
        self.is_global_zero = self.global_rank == 0
        self.should_stop = False


class TrainingControllerZMQ:
    """Polls the controller socket on the global-zero rank only."""

    def __init__(self, trainer):
        self.socket = deque()  # stands in for the zmq SUB socket bound on rank 0

    def receive(self):
        return self.socket.popleft() if self.socket else None

    def on_train_batch_end(self, trainer, step):
        if trainer.is_global_zero:
            if step == STOP_ARRIVES_AT_STEP:
                self.socket.append({"command": "stop"})  # the GUI's "Stop Early"
            message = self.receive()
            if message is not None and message["command"] == "stop":
                trainer.should_stop = True
        dist.barrier()  # BUG


def fit(trainer, model, optimizer, controller):
    for step in range(MAX_STEPS):
        x = torch.full((4, 3), float(step + 1 + trainer.global_rank))
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        controller.on_train_batch_end(trainer, step)
        if trainer.should_stop:
            print(f"[rank {trainer.global_rank}] stopping after step {step}", flush=True)
            break
    dist.barrier()  # WAITS
    return step


def worker():
    torch.manual_seed(0)
    trainer = Trainer()
    model = DDP(torch.nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    last = fit(trainer, model, optimizer, TrainingControllerZMQ(trainer))  # WAITS
    print(f"[rank {trainer.global_rank}] fit finished at step {last}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
