"""Checkpoint saved into a staging directory that the main process renames after every process has written.

``Trainer._save_checkpoint`` of huggingface/transformers as fixed by PR #28009 (the rename of the staging
directory only on the main process) and PR #28364 ("Fix for checkpoint rename race condition": the rename by
the main process once the others are done, then ``fsync``), for issues #27925 / #28015: the main process writes
the model, optimizer and ``trainer_state.json``; every process writes ``rng_state_{rank}.pth``; all wait; the
main process renames ``tmp-checkpoint-N`` to ``checkpoint-N``; all wait again before anyone goes on.

Looks suspicious, is right: the file writes and the rename are under ``if self.should_save`` (rank 0) with no
collective inside, and the two barriers around the rename are on every rank. The shared output directory is
named after ``MASTER_PORT`` and removed by rank 0 at the end.
"""

import json
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

MAX_STEPS = 4
SAVE_STEPS = 2


def run_dir():
    return os.path.join(tempfile.gettempdir(), f"r7_hf_staging_{os.environ.get('MASTER_PORT', '0')}")


class MiniTrainer:
    def __init__(self, model, optimizer, output_dir):
        self.model, self.optimizer, self.output_dir = model, optimizer, output_dir
        self.rank = dist.get_rank()
        self.global_step = 0

    @property
    def should_save(self):
        return self.rank == 0

    def _save_rng_state(self, output_dir):
        os.makedirs(output_dir, exist_ok=True)
        torch.save({"cpu": torch.get_rng_state()}, os.path.join(output_dir, f"rng_state_{self.rank}.pth"))

    def _save_checkpoint(self):
        output_dir = os.path.join(self.output_dir, f"checkpoint-{self.global_step}")
        staging_output_dir = os.path.join(self.output_dir, f"tmp-checkpoint-{self.global_step}")
        if self.should_save:
            os.makedirs(staging_output_dir, exist_ok=True)
            torch.save(self.model.module.state_dict(), os.path.join(staging_output_dir, "pytorch_model.bin"))
            torch.save(self.optimizer.state_dict(), os.path.join(staging_output_dir, "optimizer.pt"))
            with open(os.path.join(staging_output_dir, "trainer_state.json"), "w") as f:
                json.dump({"global_step": self.global_step}, f)
        self._save_rng_state(staging_output_dir)
        dist.barrier()  # every process has written its files (PR #28364: wait_for_everyone)
        if self.should_save and staging_output_dir != output_dir:
            os.rename(staging_output_dir, output_dir)
            fd = os.open(self.output_dir, os.O_RDONLY)  # make the rename durable before the others go on
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        dist.barrier()  # no process touches checkpoint-N before it exists

    def training_step(self, batch):
        x, y = batch
        self.optimizer.zero_grad()
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def train(self):
        generator = torch.Generator().manual_seed(self.rank)
        for _ in range(MAX_STEPS):
            batch = (torch.randn(16, 64, generator=generator), torch.randn(16, 64, generator=generator))
            self.training_step(batch)
            self.global_step += 1
            if self.global_step % SAVE_STEPS == 0:
                self._save_checkpoint()


def worker():
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    trainer = MiniTrainer(model, optimizer, run_dir())
    try:
        trainer.train()
        dist.barrier()
        if trainer.rank == 0:
            saved = sorted(os.listdir(run_dir()))
            assert saved == ["checkpoint-2", "checkpoint-4"], saved
            files = sorted(os.listdir(os.path.join(run_dir(), "checkpoint-4")))
            assert "rng_state_1.pth" in files and "optimizer.pt" in files, files
            print(saved, files)
        dist.barrier()
    finally:
        if trainer.rank == 0:
            shutil.rmtree(run_dir(), ignore_errors=True)


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
