"""Exit-on-signal in a Megatron-style training loop that agrees on the signal with an all-gather.

Megatron-LM's ``--exit-signal-handler`` as upstream has it: ``megatron/training/dist_signal_handler.py``
(``DistributedSignalHandler``: a handler sets the rank's ``_signal_received``; ``signals_received()``
all-gathers the flags with ``all_gather_item``) and ``megatron/training/training.py`` ``train()`` (every
iteration, on every rank: ``if any(signal_handler.signals_received()): save_checkpoint_and_time(...)``, then
exit).

The preemption signal reaches rank 0 alone at iteration 3 (``_scheduler_notice`` stands in for the cluster),
yet both ranks see it in the same iteration through the all-gather, save together (the barriers inside
``save_checkpoint`` pair up) and leave the loop together. The per-iteration all-gather is a collective under
no condition; the rank-0-only part of the save (serialising into a buffer) has no collective inside.
"""

import io
import os
import signal

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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
    dist.barrier()
    if dist.get_rank() == 0:
        buffer = io.BytesIO()  # stands in for the checkpoint directory
        torch.save({"iteration": iteration, "model": model.module.state_dict(),
                    "optimizer": optimizer.state_dict()}, buffer)
    dist.barrier()


def train_step(model, optimizer, batch):
    x, y = batch
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def train(model, optimizer, signal_handler):
    rank = dist.get_rank()
    generator = torch.Generator().manual_seed(rank)
    for iteration in range(1, TRAIN_ITERS + 1):
        _scheduler_notice(rank, iteration)
        batch = (torch.randn(8, 4, generator=generator), torch.randn(8, 1, generator=generator))
        loss = train_step(model, optimizer, batch)
        if any(signal_handler.signals_received()):
            save_checkpoint(iteration, model, optimizer)
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
        train(model, optimizer, handler)


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
