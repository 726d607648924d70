"""starVLA: `wandb.init()` runs on the main process only, unguarded; when it fails the other ranks wait in training.

Source: starVLA/starVLA PR #369 ("[fix] make W&B init/log/finish best-effort and rank-synced (avoid NCCL hang)",
2026-06); `train_starvla.py` (and `train_starvla_cotrain.py`) `VLATrainer._init_wandb`, `train`.

`_init_wandb` calls `wandb.init()` on the main process only, "with no exception handling and no rendezvous
afterwards. If rank 0's `wandb.init()` is slow or fails (transient network issues, blocked/unreachable endpoints,
etc.), the other ranks proceed straight to the first collective and block waiting for rank 0" -- in the PR's
multi-node run the W&B endpoint was unreachable and the job "hung and died on an NCCL timeout". Here the model is
DDP-wrapped before `_init_wandb`; a 15-line stand-in for the `wandb` module cannot reach its server (0.3 s, then
`CommError`), so rank 0 raises out of the trainer's constructor while rank 1 is already in its first backward's
gradient all-reduce. The fix (the PR): wrap `wandb.init()` in try/except and keep training with W&B disabled, wait
for every rank after the main process's init, and guard `wandb.log` / `wandb.finish` with the enabled flag.
"""

from __future__ import annotations

import datetime
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15


class CommError(Exception):
    pass


class Wandb:
    """Stand-in for the `wandb` module, its server unreachable from this cluster."""

    def __init__(self, reachable: bool):
        self.reachable, self.run, self.logged = reachable, None, []

    def init(self, project, config):
        time.sleep(0.3)  # the connection attempt
        if not self.reachable:
            raise CommError("Run initialization has timed out after 0.3 sec. Please check your network.")
        self.run = project

    def log(self, data, step):
        if self.run is None:
            raise CommError("You must call wandb.init() before wandb.log()")
        self.logged.append((step, data))

    def finish(self):
        self.run = None


wandb = Wandb(reachable=False)


class VLATrainer:
    def __init__(self, model, config):
        self.rank = dist.get_rank()
        self.is_main_process = self.rank == 0
        self.model = DDP(model)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.config = config
        self._init_wandb()

    def _init_wandb(self):
        if self.is_main_process:
            wandb.init(project="starvla", config=self.config)  # BUG

    def train(self, steps):
        torch.manual_seed(100 + self.rank)
        for step in range(steps):
            obs, action = torch.randn(4, 10), torch.randn(4, 7)
            loss = (self.model(obs) - action).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()  # WAITS
            self.optimizer.step()
            if self.is_main_process:
                wandb.log({"train/action_loss": loss.item()}, step=step)
        if self.is_main_process:
            wandb.finish()
        return loss.item()


def worker():
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(10, 16), nn.GELU(), nn.Linear(16, 7))  # the action head
    trainer = VLATrainer(policy, config={"lr": 1e-3, "steps": 3})
    loss = trainer.train(steps=3)  # WAITS
    print(f"rank {dist.get_rank()}: trained 3 steps, action loss {loss:.4f}, "
          f"wandb entries logged here: {len(wandb.logged)}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
