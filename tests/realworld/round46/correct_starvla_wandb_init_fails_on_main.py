"""starVLA: `wandb.init()` made best-effort and rank-synced; training goes on with W&B disabled when it fails.

Source: starVLA/starVLA PR #369 ("[fix] make W&B init/log/finish best-effort and rank-synced (avoid NCCL hang)",
2026-06); `train_starvla.py` `VLATrainer._init_wandb`, `train`.

The main process's `wandb.init()` cannot reach the server (a 15-line stand-in for the `wandb` module: 0.3 s, then
`CommError`). As the PR fixes it, `_init_wandb` catches the error, logs a warning and leaves W&B disabled, then
every rank waits for the others (`accelerator.wait_for_everyone()`, here `dist.barrier()`); `wandb.log` and
`wandb.finish` run only while W&B is enabled. Both ranks train 3 steps; rank 0 prints the warning.
"""

from __future__ import annotations

import datetime
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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
        self._wandb_enabled = False
        if self.is_main_process:
            try:
                wandb.init(project="starvla", config=self.config)
                self._wandb_enabled = True
            except Exception as exc:  # a W&B / network hiccup must not take training down
                print(f"rank {self.rank}: W&B init failed ({exc}); training with W&B disabled", flush=True)
        dist.barrier()  # accelerator.wait_for_everyone(): a slow or failed init cannot desync the collectives

    def train(self, steps):
        torch.manual_seed(100 + self.rank)
        for step in range(steps):
            obs, action = torch.randn(4, 10), torch.randn(4, 7)
            loss = (self.model(obs) - action).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if self.is_main_process and self._wandb_enabled:
                try:
                    wandb.log({"train/action_loss": loss.item()}, step=step)
                except Exception:
                    pass
        if self.is_main_process and self._wandb_enabled:
            wandb.finish()
        return loss.item()


def worker():
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(10, 16), nn.GELU(), nn.Linear(16, 7))  # the action head
    trainer = VLATrainer(policy, config={"lr": 1e-3, "steps": 3})
    loss = trainer.train(steps=3)
    print(f"rank {dist.get_rank()}: trained 3 steps, action loss {loss:.4f}, "
          f"wandb entries logged here: {len(wandb.logged)}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
