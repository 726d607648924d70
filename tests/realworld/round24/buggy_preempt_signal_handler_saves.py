"""A SLURM pre-emption signal whose Python handler saves the checkpoint (with a barrier) on the rank that got it.

Models old Lightning ``trainer/connectors/slurm_connector.py`` (``signal.signal(SIGUSR1, self.sig_handler)``;
the handler saves a checkpoint and requeues the job), the ``trigger_job_requeue`` / ``SIGTERMHandler`` helpers
of SwAV-style training utilities (requeue on ``SLURM_PROCID == 0`` only), and the SLURM docs on
``#SBATCH --signal=B:USR1@120`` (with ``B:`` the signal reaches the batch step, not every task). Newer
Lightning (``_SignalConnector``) and Megatron's ``DistributedSignalHandler`` only record the signal in the
handler and agree on it collectively at a step boundary.

The learner's ``PreemptionHandler`` does the whole save inside the handler: a barrier ("every rank finished
its step"), rank 0 writes, a second barrier, then exit for requeue. ``ClusterStandIn`` delivers SIGUSR1 at
step 6 to rank 0's process only (as the batch-step trap on the first node would).

BUG: the collective save runs in the signal handler, i.e. on the signalled rank only, interrupting whatever
line rank 0 was on. Rank 0 waits in the handler's barrier while rank 1 is already in step 7's
``loss.backward()`` (DDP's gradient all-reduce); neither call has a partner and gloo times out.
"""
import os
import shutil
import signal
import sys
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
            os.kill(os.getpid(), signal.SIGUSR1)  # WAITS


class Trainer:
    def __init__(self, model, opt, ckpt_dir):
        self.model, self.opt, self.ckpt_dir = model, opt, ckpt_dir
        self.step = 0

    def save_checkpoint(self, tag):
        dist.barrier()  # WAITS
        if dist.get_rank() == 0:
            torch.save({"model": self.model.module.state_dict(), "optim": self.opt.state_dict(),
                        "step": self.step}, os.path.join(self.ckpt_dir, f"{tag}.pt"))
        dist.barrier()

    def train_step(self, x, y):
        loss = nn.functional.mse_loss(self.model(x), y)
        self.opt.zero_grad()
        loss.backward()  # WAITS
        self.opt.step()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        return reduced.item() / dist.get_world_size()


class PreemptionHandler:
    def __init__(self, trainer):
        self.trainer = trainer
        signal.signal(signal.SIGUSR1, self._on_sigusr1)

    def _on_sigusr1(self, signum, frame):
        self.trainer.save_checkpoint("preempted")  # BUG # WAITS
        print(f"rank {dist.get_rank()}: checkpoint saved at step {self.trainer.step}, requeueing")
        sys.exit(0)


def train(trainer, cluster):
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(rank)
    losses = []
    for step in range(1, STEPS + 1):
        trainer.step = step
        x = torch.randn(8, 4, generator=g)
        y = x.mean(dim=1, keepdim=True)
        losses.append(trainer.train_step(x, y))  # WAITS
        cluster.tick(step)  # WAITS
    return losses


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    ckpt_dir = shared_tmpdir("r24_preempt_")
    model = DDP(nn.Linear(4, 1))
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), ckpt_dir)
    PreemptionHandler(trainer)
    try:
        losses = train(trainer, ClusterStandIn(SIGNAL_STEP))  # WAITS
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
