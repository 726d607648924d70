"""A SLURM pre-emption signal recorded by the handler and agreed on by every rank at the step boundary.

Models Lightning's ``_SignalConnector`` (the SIGUSR1 handler only records the request; the trainer acts on
it in the loop), Megatron-LM's ``DistributedSignalHandler`` (each rank's "signal received" flag is
all-gathered at the end of the step, so all ranks exit together), the old Lightning ``slurm_connector.py``
(save and requeue) and the SLURM docs on ``#SBATCH --signal=B:USR1@120``.

``ClusterStandIn`` delivers SIGUSR1 at step 6 to rank 0's process only. Correct: the handler sets
``self.requested``; after every step each rank contributes its flag to an all-reduce MAX, so at step 6 every
rank learns of the request, all of them run ``save_checkpoint`` (barrier, rank-0 write, barrier) and stop
the loop together.
"""
import os
import shutil
import signal
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 12
SIGNAL_STEP = 6


def shared_tmpdir(prefix):
    box = [tempfile.mkdtemp(prefix=prefix) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


class ClusterStandIn:
    """Stands in for SLURM: the USR1 warning reaches the process of rank 0 at a given step."""

    def __init__(self, step):
        self.step = step

    def tick(self, step):
        if step == self.step and dist.get_rank() == 0:
            os.kill(os.getpid(), signal.SIGUSR1)


class Trainer:
    def __init__(self, model, opt, ckpt_dir):
        self.model, self.opt, self.ckpt_dir = model, opt, ckpt_dir
        self.step = 0

    def save_checkpoint(self, tag):
        dist.barrier()
        if dist.get_rank() == 0:
            torch.save({"model": self.model.module.state_dict(), "optim": self.opt.state_dict(),
                        "step": self.step}, os.path.join(self.ckpt_dir, f"{tag}.pt"))
        dist.barrier()

    def train_step(self, x, y):
        loss = nn.functional.mse_loss(self.model(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        return reduced.item() / dist.get_world_size()


class PreemptionHandler:
    def __init__(self, trainer):
        self.trainer = trainer
        self.requested = False
        signal.signal(signal.SIGUSR1, self._on_sigusr1)

    def _on_sigusr1(self, signum, frame):
        self.requested = True

    def any_rank_requested(self):
        flag = torch.tensor([1 if self.requested else 0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())


def train(trainer, cluster, preemption):
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(rank)
    losses = []
    for step in range(1, STEPS + 1):
        trainer.step = step
        x = torch.randn(8, 4, generator=g)
        y = x.mean(dim=1, keepdim=True)
        losses.append(trainer.train_step(x, y))
        cluster.tick(step)
        if preemption.any_rank_requested():
            trainer.save_checkpoint("preempted")
            print(f"rank {dist.get_rank()}: checkpoint saved at step {step}, requeueing")
            return losses, True
    return losses, False


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    ckpt_dir = shared_tmpdir("r24_preempt_")
    model = DDP(nn.Linear(4, 1))
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), ckpt_dir)
    preemption = PreemptionHandler(trainer)
    try:
        losses, preempted = train(trainer, ClusterStandIn(SIGNAL_STEP), preemption)
        if not preempted:
            trainer.save_checkpoint("final")
    finally:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        if rank == 0:
            shutil.rmtree(ckpt_dir, ignore_errors=True)
    if rank == 0:
        print(f"final loss {losses[-1]:.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
