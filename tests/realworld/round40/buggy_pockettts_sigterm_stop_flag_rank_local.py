"""A DDP training loop that checkpoints and leaves on SIGTERM, deciding to stop from the rank's own signal flag.

Source: kyutai-labs/pocket-tts PR #277 ("Checkpoint on SIGTERM/SIGUSR1 for graceful preemption"): the loop "catches
SIGTERM/SIGUSR1, finishes the current step, and saves a checkpoint at the interrupted step before exiting", and "the
stop flag is all-reduced across ranks at the end of each step so DDP workers exit together (a rank exiting alone
would deadlock the others in the next collective until SIGKILL)". The same hang as a user report:
Lightning-AI/pytorch-lightning issue #20806 ("SIGTERMException is not raised consistently across all ranks in DDP";
fix PR #20825). Modelled on the training loop's signal handler and end-of-step stop check.

SLURM (``scancel``, ``--signal=TERM@N``) delivers the signal per node, and a Python handler runs when each rank's main
thread next returns to the interpreter, so ranks see the flag at different steps. Here rank 1's node is signalled
during step 2: rank 1 saves its checkpoint and leaves the loop, rank 0 starts step 3 and waits in the DDP gradient
all-reduce for a rank that has left.

BUG: the end-of-step stop test reads the rank-local flag.
"""

import os
import signal
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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


def save_checkpoint(model, step, rank):
    path = os.path.join(tempfile.gettempdir(), f"pockettts_r40_buggy_rank{rank}_{os.getpid()}.pt")
    torch.save({"step": step, "model": model.module.state_dict()}, path)
    os.remove(path)
    print(f"[rank {rank}] saved checkpoint at step {step}", flush=True)


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
        loss.backward()  # WAITS
        optimizer.step()
        if rank == SIGNALLED_RANK and step == SIGNAL_STEP:
            os.kill(os.getpid(), signal.SIGTERM)  # the scheduler's warning signal reaches this node
        if stop.requested:  # BUG
            save_checkpoint(model, step, rank)
            print(f"[rank {rank}] leaving after step {step}", flush=True)
            return step
    return MAX_STEPS - 1


def worker():
    last = train()  # WAITS
    print(f"[rank {dist.get_rank()}] last step {last}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
