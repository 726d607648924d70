"""autocast (alan-turing-institute) on Lightning DDP: ``trainer.save_checkpoint`` called by every rank
after ``fit``, followed by a barrier every rank makes.

Models: alan-turing-institute/autocast issue #381 and PR #386 ("Fix post-fit NCCL watchdog hang on multi-GPU DDP
runs"): "`trainer.save_checkpoint()` is a collective operation -- it ends in a `strategy.barrier()`, which every rank
must enter. In `run_training` ... it was called inside an `if trainer.is_global_zero:` block, so only rank 0 entered
that barrier"; rank 0's save barrier pairs with the other ranks' `checkpoint-alias-finalize` barrier, and rank 0's own
finalize barrier then has no partner. Code modelled (written here, not copied): autocast's ``run_training`` (fit, then
the final checkpoint, then the checkpoint-alias step), Lightning's ``Trainer.save_checkpoint`` (the checkpoint written
by global rank 0, then ``strategy.barrier("Trainer.save_checkpoint")``) and ``DDPStrategy.barrier`` (a
``torch.distributed.barrier``); ``fit`` is a stand-in: a DDP training loop over a per-rank shard.

Correct (the PR's fix): every rank calls ``trainer.save_checkpoint`` (Lightning writes the file on global rank 0
only), so every rank makes the save barrier and then the finalize barrier. 2 ranks.
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


class DDPStrategy:
    def barrier(self, name=None):
        dist.barrier()


class Trainer:
    def __init__(self, max_epochs):
        self.max_epochs = max_epochs
        self.strategy = DDPStrategy()
        self.model = None
        self.optimizer = None
        self.current_epoch = 0

    @property
    def is_global_zero(self):
        return dist.get_rank() == 0

    def fit(self, module, batches):
        self.model = DDP(module)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        for epoch in range(self.max_epochs):
            for x, y in batches:
                loss = F.mse_loss(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            self.current_epoch = epoch + 1
            print(f"[rank {dist.get_rank()}] epoch {epoch}: loss {loss.item():.4f}", flush=True)

    def save_checkpoint(self, filepath):
        checkpoint = {"epoch": self.current_epoch, "state_dict": self.model.module.state_dict(),
                      "optimizer_states": [self.optimizer.state_dict()]}
        if self.is_global_zero:
            torch.save(checkpoint, filepath)
        self.strategy.barrier("Trainer.save_checkpoint")


class Processor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))

    def forward(self, x):
        return x + self.net(x)


def finalize_checkpoint_alias(trainer, run_dir):
    if trainer.is_global_zero:
        with open(os.path.join(run_dir, "final_model.txt"), "w") as f:
            f.write("final.ckpt\n")
    trainer.strategy.barrier("checkpoint-alias-finalize")


def run_training(trainer, run_dir, batches):
    trainer.fit(Processor(), batches)
    final_path = os.path.join(run_dir, "final.ckpt")
    trainer.save_checkpoint(final_path)
    finalize_checkpoint_alias(trainer, run_dir)
    print(f"[rank {dist.get_rank()}] run finished, final checkpoint {final_path}", flush=True)


def make_batches(rank, n):
    gen = torch.Generator().manual_seed(7 + rank)
    out = []
    for _ in range(n):
        x = torch.randn(16, 8, generator=gen)
        out.append((x, 0.9 * x + 0.1 * x.roll(1, dims=1)))
    return out


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    run_dir = os.path.join(tempfile.gettempdir(), f"r34_autocast_{os.environ.get('MASTER_PORT', '0')}")
    if rank == 0:
        os.makedirs(run_dir, exist_ok=True)
    dist.barrier()
    run_training(Trainer(max_epochs=2), run_dir, make_batches(rank, 4))
    if rank == 0:
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
