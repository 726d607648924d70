"""HF ``Trainer._save_checkpoint`` after PR #11620: every rank makes ``checkpoint-<step>`` (``os.makedirs(...,
exist_ok=True)``) before it writes its ``rng_state_<rank>.pth`` -- the fix of huggingface/transformers issue #11618.

Models: huggingface/transformers PR #11620 ("Fix RNG saves in distributed mode": the RNG saves "can yield to an error
when one of the process of local_rank != 0 arrives to the end of the function faster then the process local_rank=0
arrived at the beginning: in this case the subfolder "checkpoint-xxx" is not created yet, so trying to save inside
fails"; the fix creates the folder on every rank before the RNG save). Code modelled (written here, not copied):
``src/transformers/trainer.py`` of v4.6 -- ``Trainer._maybe_log_save_evaluate`` (log, then ``_save_checkpoint``),
``_save_checkpoint`` (``checkpoint-{global_step}`` under the output dir, ``save_model`` -> ``_save`` which makes the
folder and writes the weights on the world process zero, optimizer and scheduler on process zero, then
``rng_state_{local_rank}.pth`` written by every rank), the DDP training loop of ``train``. Stand-ins: a tiny regression
model, and the main process's reporting integrations in ``log`` (0.5 s, which puts rank 0 behind rank 1 when the save
starts, as in the report).

At global steps 2 and 4 rank 1 reaches the RNG save while rank 0 is still logging; it makes the folder itself, and
both checkpoints hold the weights, the optimizer and both RNG files. 2 ranks.
"""

import datetime
import os
import random
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

PREFIX_CHECKPOINT_DIR = "checkpoint"


class Trainer:
    def __init__(self, model, output_dir, save_steps):
        self.model = DDP(model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.output_dir = output_dir
        self.save_steps = save_steps
        self.global_step = 0
        self.local_rank = dist.get_rank()
        self.history = []

    def is_world_process_zero(self):
        return dist.get_rank() == 0

    def log(self, logs):
        self.history.append(logs)
        if self.is_world_process_zero():
            time.sleep(0.5)  # stand-in: the reporting integrations (TensorBoard, W&B) on the main process

    def _save(self, output_dir):
        os.makedirs(output_dir, exist_ok=True)
        torch.save(self.model.module.state_dict(), os.path.join(output_dir, "pytorch_model.bin"))

    def save_model(self, output_dir):
        if self.is_world_process_zero():
            self._save(output_dir)

    def _save_checkpoint(self):
        checkpoint_folder = f"{PREFIX_CHECKPOINT_DIR}-{self.global_step}"
        output_dir = os.path.join(self.output_dir, checkpoint_folder)
        self.save_model(output_dir)
        if self.is_world_process_zero():
            torch.save(self.optimizer.state_dict(), os.path.join(output_dir, "optimizer.pt"))
        rng_states = {"python": random.getstate(), "cpu": torch.random.get_rng_state()}
        # a process can get here before process 0 has made the folder: make it on every rank
        os.makedirs(output_dir, exist_ok=True)
        torch.save(rng_states, os.path.join(output_dir, f"rng_state_{self.local_rank}.pth"))

    def _maybe_log_save_evaluate(self, loss):
        self.log({"loss": loss, "step": self.global_step})
        if self.global_step % self.save_steps == 0:
            self._save_checkpoint()

    def train(self, batches):
        for x, y in batches:
            loss = F.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.global_step += 1
            self._maybe_log_save_evaluate(loss.item())
        return self.history[-1]["loss"]


def worker():
    rank = dist.get_rank()
    out = os.path.join(tempfile.gettempdir(), f"r36_hf_rng_{os.environ.get('MASTER_PORT', '0')}")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    gen = torch.Generator().manual_seed(10 + rank)
    batches = [(torch.randn(4, 5, generator=gen), torch.randn(4, 1, generator=gen)) for _ in range(4)]
    trainer = Trainer(model, out, save_steps=2)
    loss = trainer.train(batches)
    dist.barrier()
    saved = {d: len(os.listdir(os.path.join(out, d))) for d in sorted(os.listdir(out))}
    print(f"[rank {rank}] trained {trainer.global_step} steps, loss {loss:.4f}, checkpoints {saved}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
