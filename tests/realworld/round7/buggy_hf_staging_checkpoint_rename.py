"""Checkpoint saved into a staging directory that every process renames as soon as its own files are written.

Models ``Trainer._save_checkpoint`` of huggingface/transformers 4.36.0 (PR #27820 introduced the staging
directory): the model, optimizer and ``trainer_state.json`` are written by the main process, ``_save_rng_state``
writes ``rng_state_{rank}.pth`` on every process (creating the directory with ``exist_ok=True``), and then
``if staging_output_dir != output_dir: os.rename(staging_output_dir, output_dir)`` ran on every process.
Reported as issues #27925 and #28015 ("Race condition while saving the checkpoint of the model": "one of these
nodes reaches [the rename] and renames the staging_output_dir ... any node including the root node trying to
save the model state in staging_output_dir will fail") and axolotl issue #948; fixed by PR #28009 (rename on
the main process only) and PR #28364 (rename by the main process after the others are done, with fsync).

Rank 1 has only its RNG state to write, renames the directory and goes on to the next training step, while
rank 0 is still writing the model and optimizer into the staging path, or renames a directory that is gone.
Either way one process fails with a file error (which one, and on which line, depends on the interleaving; in
every interleaving the second rename of the same staging directory fails) and the other is left waiting in
the next step's gradient all-reduce. The shared output directory is named after ``MASTER_PORT`` and removed
by the failing rank.

BUG: the rename of the shared staging directory runs on every process, with no wait for the others' writes.
"""

import json
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
        if staging_output_dir != output_dir:
            os.rename(staging_output_dir, output_dir)  # BUG

    def training_step(self, batch):
        x, y = batch
        self.optimizer.zero_grad()
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()  # WAITS
        self.optimizer.step()
        return loss.detach()

    def train(self):
        generator = torch.Generator().manual_seed(self.rank)
        for _ in range(MAX_STEPS):
            batch = (torch.randn(16, 64, generator=generator), torch.randn(16, 64, generator=generator))
            self.training_step(batch)  # WAITS
            self.global_step += 1
            if self.global_step % SAVE_STEPS == 0:
                self._save_checkpoint()


def worker():
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    trainer = MiniTrainer(model, optimizer, run_dir())
    try:
        trainer.train()  # WAITS
    except BaseException:
        shutil.rmtree(run_dir(), ignore_errors=True)
        raise
    dist.barrier()
    if trainer.rank == 0:
        print(sorted(os.listdir(run_dir())))
        shutil.rmtree(run_dir(), ignore_errors=True)


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
