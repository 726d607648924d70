"""Exit-on-signal in a Megatron-style training loop that reads the rank's own signal flag.

Models Megatron-LM's ``--exit-signal-handler``: ``megatron/training/dist_signal_handler.py``
(``DistributedSignalHandler`` installs a handler that sets ``_signal_received``; ``signals_received()``
all-gathers the flag with ``all_gather_item``) and the check in ``megatron/training/training.py`` ``train()``
(``if any(signal_handler.signals_received()): save_checkpoint_and_time(...); exit``). Forks that patch the
handler to return the local flag instead (e.g. a ``signals_received`` that returns ``self._signal_received``,
seen in a patched copy of the file in the code search) decide per rank.

The scheduler's preemption signal (SIGUSR2 here; SLURM's ``--signal``) reaches the ranks at different times;
in this item it reaches rank 0 at iteration 3 and rank 1 not within the run (``_scheduler_notice`` stands in
for the cluster). Rank 0 alone goes into ``save_checkpoint`` and waits in its first barrier, while rank 1
runs the next training step, whose DDP gradient all-reduce rank 0 never joins.

BUG: the exit decision uses the rank-local ``_signal_received`` instead of the all-gathered flags.
"""

import io
import os
import signal

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

EXIT_SIGNAL = signal.SIGUSR2
TRAIN_ITERS = 6


class DistributedSignalHandler:
    def __init__(self, sig=EXIT_SIGNAL):
        self.sig = sig
        self._signal_received = False
        self.original_handler = None

    def signals_received(self):
        flag = torch.tensor([int(self._signal_received)], dtype=torch.int32)
        flags = [torch.zeros(1, dtype=torch.int32) for _ in range(dist.get_world_size())]
        dist.all_gather(flags, flag)
        return [bool(f.item()) for f in flags]

    def __enter__(self):
        self._signal_received = False
        self.original_handler = signal.getsignal(self.sig)

        def handler(signum, frame):
            self._signal_received = True

        signal.signal(self.sig, handler)
        return self

    def __exit__(self, *exc):
        signal.signal(self.sig, self.original_handler)


def _scheduler_notice(rank, iteration):
    """Stand-in for the cluster: the preemption signal reaches rank 0 first."""
    if rank == 0 and iteration == 3:
        os.kill(os.getpid(), EXIT_SIGNAL)


def save_checkpoint(iteration, model, optimizer):
    dist.barrier()  # WAITS
    if dist.get_rank() == 0:
        buffer = io.BytesIO()  # stands in for the checkpoint directory
        torch.save({"iteration": iteration, "model": model.module.state_dict(),
                    "optimizer": optimizer.state_dict()}, buffer)
    dist.barrier()


def train_step(model, optimizer, batch):
    x, y = batch
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()  # WAITS
    optimizer.step()
    return loss.detach()


def train(model, optimizer, signal_handler):
    rank = dist.get_rank()
    generator = torch.Generator().manual_seed(rank)
    for iteration in range(1, TRAIN_ITERS + 1):
        _scheduler_notice(rank, iteration)
        batch = (torch.randn(8, 4, generator=generator), torch.randn(8, 1, generator=generator))
        loss = train_step(model, optimizer, batch)  # WAITS
        if signal_handler._signal_received:  # BUG
            save_checkpoint(iteration, model, optimizer)  # WAITS
            if rank == 0:
                print(f"exiting program after receiving signal at iteration {iteration}")
            return iteration
        if rank == 0:
            print(f"iteration {iteration} loss {loss.item():.4f}")
    return TRAIN_ITERS


def worker():
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with DistributedSignalHandler() as handler:
        train(model, optimizer, handler)  # WAITS


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
