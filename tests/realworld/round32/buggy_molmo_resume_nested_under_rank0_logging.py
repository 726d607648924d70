"""Molmo's training script: the resume-from-latest-checkpoint block indented under the rank-0 configuration log.

Models: allenai/molmo PR #33 ("Fix indentation in resume-training checkpoint logic": "When resuming training, the
checkpoint-loading snippet was incorrectly nested under ``if get_global_rank() == 0: log.info("Configuration:")
log.info(cfg)  if cfg.allow_resume: # load checkpoint…``. As a result, only GPU rank 0 ever attempted to load the
model state. All other ranks idled at the barrier and eventually timed out"; the fix dedents the block so every rank
invokes the checkpoint loader). Code modelled (written here, not copied): Molmo's ``launch_scripts`` / OLMo-style
``scripts/train.py`` ``main`` (the configuration logged by rank 0, ``allow_resume`` looking for the latest
``step*`` folder in ``save_folder``, ``trainer.restore_checkpoint``, a ``barrier()`` before ``trainer.fit()``), the
trainer's restore of an unsharded checkpoint (rank 0 reads the file and the model's parameters are broadcast from
it, as a rank-0-only full-state-dict load with ``sync_module_states`` does; the trainer state -- the global step --
broadcast too).

2 ranks; an earlier, pre-empted run left ``step4`` in the shared save folder (written at the start, a stand-in). Rank 0
logs the configuration, finds ``step4`` and waits in the first parameter broadcast of the restore; rank 1 waits in
the barrier before ``fit``.
Bug: the ``allow_resume`` block inside ``if get_global_rank() == 0:`` (BUG); waiting: rank 0 in the restore's
broadcast, rank 1 in the barrier (WAITS).
"""

import datetime
import glob
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

MAX_STEPS = 8
PREVIOUS_RUN_STEPS = 4


def get_global_rank():
    return dist.get_rank()


def barrier():
    dist.barrier()  # WAITS


def save_folder():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r32_molmo_{tag}")


class TrainConfig:
    def __init__(self):
        self.save_folder = save_folder()
        self.allow_resume = True
        self.max_duration = MAX_STEPS
        self.model = {"d_model": 16, "n_layers": 2}

    def __repr__(self):
        return f"TrainConfig(save_folder={self.save_folder!r}, allow_resume={self.allow_resume}, " \
               f"max_duration={self.max_duration}, model={self.model})"


def build_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = DDP(build_model())
        self.optim = torch.optim.AdamW(self.model.parameters(), lr=1e-2)
        self.global_step = 0

    def restore_checkpoint(self, load_path):
        state = torch.load(os.path.join(load_path, "model.pt")) if get_global_rank() == 0 else None
        for name, param in self.model.module.named_parameters():
            with torch.no_grad():
                if get_global_rank() == 0:
                    param.copy_(state["model"][name])
                dist.broadcast(param.data, src=0)  # WAITS
        trainer_state = [state["global_step"] if state is not None else None]
        dist.broadcast_object_list(trainer_state, src=0)
        self.global_step = trainer_state[0]
        barrier()

    def fit(self):
        rank = get_global_rank()
        g = torch.Generator().manual_seed(rank)
        while self.global_step < self.cfg.max_duration:
            x = torch.randn(8, 8, generator=g)
            loss = (self.model(x) - x.flip(-1)).pow(2).mean()
            loss.backward()
            self.optim.step()
            self.optim.zero_grad()
            self.global_step += 1
        return loss.item()


def latest_checkpoint(folder):
    steps = sorted(glob.glob(os.path.join(folder, "step*")), key=lambda p: int(os.path.basename(p)[4:]))
    return steps[-1] if steps else None


def main(cfg):
    trainer = Trainer(cfg)
    if get_global_rank() == 0:
        print(f"[rank 0] Configuration:\n[rank 0] {cfg}", flush=True)
        if cfg.allow_resume:  # BUG
            load_path = latest_checkpoint(cfg.save_folder)
            if load_path is not None:
                print(f"[rank 0] resuming from {load_path}", flush=True)
                trainer.restore_checkpoint(load_path)  # WAITS
    barrier()  # WAITS
    loss = trainer.fit()
    print(f"[rank {get_global_rank()}] trained to step {trainer.global_step}, loss {loss:.4f}", flush=True)


def write_previous_run_checkpoint(cfg):
    """The pre-empted earlier run: its step-4 checkpoint in the shared save folder."""
    model = build_model()
    path = os.path.join(cfg.save_folder, f"step{PREVIOUS_RUN_STEPS}")
    os.makedirs(path, exist_ok=True)
    torch.save({"model": {k: v + 0.01 for k, v in model.state_dict().items()}, "global_step": PREVIOUS_RUN_STEPS},
               os.path.join(path, "model.pt"))


def worker():
    cfg = TrainConfig()
    if get_global_rank() == 0:
        shutil.rmtree(cfg.save_folder, ignore_errors=True)
        write_previous_run_checkpoint(cfg)
    barrier()
    main(cfg)  # WAITS
    barrier()
    if get_global_rank() == 0:
        shutil.rmtree(cfg.save_folder, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
