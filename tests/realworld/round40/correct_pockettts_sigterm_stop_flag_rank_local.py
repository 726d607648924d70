"""A DDP training loop that checkpoints and leaves on SIGTERM, with the stop flag all-reduced at the end of every step.

Source: kyutai-labs/pocket-tts PR #277 ("Checkpoint on SIGTERM/SIGUSR1 for graceful preemption": "The stop flag is
all-reduced across ranks at the end of each step so DDP workers exit together"); the same fix for the user report
Lightning-AI/pytorch-lightning issue #20806 in PR #20825 (the SIGTERM flag is synchronised before any rank raises).

Rank 1's node is signalled during step 2. At the end of step 2 the flags are combined with ``all_reduce(MAX)``, so
both ranks stop after step 2; rank 0 writes the checkpoint and a barrier holds rank 1 until it is written.
"""

import os
import signal
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

MAX_STEPS = 6
SIGNALLED_RANK, SIGNAL_STEP = 1, 2


class StopRequest:
    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGTERM, self._handler)

    def _handler(self, signum, frame):
        self.requested = True

    def agreed(self):
        flag = torch.tensor([1.0 if self.requested else 0.0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())


def save_checkpoint(model, step, rank):
    if rank == 0:
        path = os.path.join(tempfile.gettempdir(), f"pockettts_r40_correct_{os.getpid()}.pt")
        torch.save({"step": step, "model": model.module.state_dict()}, path)
        os.remove(path)
        print(f"[rank 0] saved checkpoint at step {step}", flush=True)
    dist.barrier()


def train():
    rank = dist.get_rank()
    stop = StopRequest()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for step in range(MAX_STEPS):
        optimizer.zero_grad()
        loss = model(torch.randn(8, 4, generator=g)).pow(2).mean()
        loss.backward()
        optimizer.step()
        if rank == SIGNALLED_RANK and step == SIGNAL_STEP:
            os.kill(os.getpid(), signal.SIGTERM)
        if stop.agreed():
            save_checkpoint(model, step, rank)
            print(f"[rank {rank}] leaving after step {step}", flush=True)
            return step
    return MAX_STEPS - 1


def worker():
    last = train()
    print(f"[rank {dist.get_rank()}] last step {last}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
