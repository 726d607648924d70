"""HF transformers ``Trainer`` (autumn 2020): ``store_flos`` -- an all-gather of every process's FLOs count -- called
inside ``_save``, which only the world-process-zero runs.

Models: huggingface/transformers PR #7365 ("Fixing case in which `Trainer` hung while saving model in distributed
training": "the call to `store_flos` in `Trainer` can hang indefinitely, as it was only executed in the main thread and
in some cases the other threads were already past this point. This PR moves this call"). Code modelled (written here,
not copied): ``trainer.py`` of transformers 3.2 -- ``Trainer.train`` (a DDP-wrapped model, ``save_steps``, the
checkpoint block calling ``save_model(output_dir)`` and rank 0 saving the optimizer), ``save_model`` ->
``if self.is_world_process_zero(): self._save(output_dir)``, ``_save`` writing the weights and ``training_args.bin``
and then calling ``self.store_flos()``, ``store_flos`` -> ``distributed_broadcast_scalars([self.total_flos]).sum()``
(``trainer_utils``: an ``all_gather`` of one scalar per process) stored in ``model.config.total_flos``.

The bug: ``store_flos`` is a collective reached only through the rank-0 branch of ``save_model``; at the first
checkpoint rank 0 waits in its all-gather while rank 1 has gone on to the next training step's DDP backward.
2 ranks.
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

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


def distributed_broadcast_scalars(scalars):
    tensorized = torch.tensor(scalars, dtype=torch.float64)
    output_tensors = [tensorized.clone() for _ in range(dist.get_world_size())]
    dist.all_gather(output_tensors, tensorized)  # WAITS
    return torch.cat(output_tensors, dim=0)


class TinyConfig:
    total_flos = 0.0


class TinyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = TinyConfig()
        self.dense = nn.Linear(16, 32)
        self.out = nn.Linear(32, 2)

    def forward(self, x):
        return self.out(torch.tanh(self.dense(x)))

    def floating_point_ops(self, x):
        return 6 * x.shape[0] * sum(p.numel() for p in self.parameters())


class Trainer:
    def __init__(self, model, output_dir, save_steps):
        self.model = model
        self.output_dir = output_dir
        self.save_steps = save_steps
        self.total_flos = 0.0
        self.global_step = 0

    def is_world_process_zero(self):
        return dist.get_rank() == 0

    def store_flos(self):
        if self.total_flos is not None:
            total_flos = distributed_broadcast_scalars([self.total_flos]).sum().item()  # WAITS
            if total_flos > 0:
                self.model.config.total_flos = total_flos

    def _save(self, output_dir):
        os.makedirs(output_dir, exist_ok=True)
        torch.save(self.model.state_dict(), os.path.join(output_dir, "pytorch_model.bin"))
        torch.save({"save_steps": self.save_steps}, os.path.join(output_dir, "training_args.bin"))
        self.store_flos()  # BUG # WAITS

    def save_model(self, output_dir):
        if self.is_world_process_zero():
            self._save(output_dir)  # WAITS

    def train(self, batches):
        rank = dist.get_rank()
        model = DDP(self.model)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for x, y in batches:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()  # WAITS
            optimizer.step()
            self.total_flos += self.model.floating_point_ops(x)
            self.global_step += 1
            if self.global_step % self.save_steps == 0:
                output_dir = os.path.join(self.output_dir, f"checkpoint-{self.global_step}")
                self.save_model(output_dir)  # WAITS
                if self.is_world_process_zero():
                    torch.save(optimizer.state_dict(), os.path.join(output_dir, "optimizer.pt"))
                print(f"[rank {rank}] step {self.global_step}: loss {loss.item():.4f}, saved {output_dir}", flush=True)
        return self.global_step


def make_batches(rank, n):
    gen = torch.Generator().manual_seed(100 + rank)
    return [(torch.randn(8, 16, generator=gen), torch.randint(0, 2, (8,), generator=gen)) for _ in range(n)]


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    output_dir = os.path.join(tempfile.gettempdir(), f"r34_flos_{os.environ.get('MASTER_PORT', '0')}")
    trainer = Trainer(TinyModel(), output_dir, save_steps=3)
    steps = trainer.train(make_batches(rank, 6))  # WAITS
    print(f"[rank {rank}] trained {steps} steps, total_flos {trainer.model.config.total_flos:.0f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(output_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
