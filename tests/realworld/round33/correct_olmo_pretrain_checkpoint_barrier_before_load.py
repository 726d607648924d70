"""OLMo's training script: the pre-train checkpoint saved, a barrier, then loaded back.

Models: allenai/OLMo PR #234 ("Adding a torch barrier before loading of pre-train checkpoint": "the initial checkpoint
is sometimes read before all nodes are finished writing (leading to a FileNotFoundError) ... A barrier here should
prevent this race condition"). Code modelled (written here, not copied): OLMo's ``scripts/train.py`` of mid-2023
(``log.info("Saving pre-train checkpoint...")``, ``trainer.save_sharded_checkpoint()``, then ``"Attempting to load
pre-train checkpoint..."`` and ``trainer.restore_sharded_checkpoint(checkpoint_path)``) and ``olmo/train.py``
``Trainer.save_sharded_checkpoint`` (rank 0 makes ``step{N}-tmp``, a barrier, every rank writes ``rank{R}.pt``, rank 0
the config, a barrier, then rank 0 alone replaces the temporary folder with ``step{N}`` and links ``latest``) and
``restore_sharded_checkpoint`` (each rank loads ``step{N}/rank{R}.pt``, then a barrier). The FSDP model is a DDP
model here; each rank's shard is its own state dict.

The fix modelled is the PR's: a ``barrier()`` between the save and the restore in the training script, so no rank
opens ``step0/rank{R}.pt`` before rank 0 has finished the rename (the same 1.0 s timing stand-in). Both ranks restore
their shard and train 6 steps. 2 ranks.
"""

import datetime
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

RENAME_VISIBLE_AFTER = 1.0


def get_global_rank():
    return dist.get_rank()


def barrier():
    dist.barrier()


class Trainer:
    def __init__(self, save_folder, model, optim):
        self.save_folder = Path(save_folder)
        self.fsdp_model = model
        self.optim = optim
        self.global_step = 0

    def state_dict(self):
        return {"model": self.fsdp_model.state_dict(), "optim": self.optim.state_dict(), "global_step": self.global_step}

    def save_sharded_checkpoint(self):
        checkpoint_dir = self.save_folder / f"step{self.global_step}"
        checkpoint_dir_tmp = self.save_folder / f"step{self.global_step}-tmp"
        if get_global_rank() == 0:
            checkpoint_dir_tmp.mkdir(parents=True, exist_ok=True)
        barrier()
        torch.save(self.state_dict(), checkpoint_dir_tmp / f"rank{get_global_rank()}.pt")
        if get_global_rank() == 0:
            (checkpoint_dir_tmp / "config.yaml").write_text("model: tiny\nsave_folder: %s\n" % self.save_folder)
        barrier()
        if get_global_rank() == 0:
            time.sleep(RENAME_VISIBLE_AFTER)
            checkpoint_dir_tmp.replace(checkpoint_dir)
            latest = self.save_folder / "latest"
            latest.unlink(missing_ok=True)
            latest.symlink_to(checkpoint_dir.name, target_is_directory=True)
        return checkpoint_dir

    def restore_sharded_checkpoint(self, load_path):
        state_dict = torch.load(load_path / f"rank{get_global_rank()}.pt")
        self.global_step = state_dict["global_step"]
        self.fsdp_model.load_state_dict(state_dict["model"])
        self.optim.load_state_dict(state_dict["optim"])
        barrier()

    def fit(self, steps):
        gen = torch.Generator().manual_seed(7 + get_global_rank())
        for _ in range(steps):
            x = torch.randn(8, 10, generator=gen)
            loss = F.mse_loss(self.fsdp_model(x), x.sum(dim=1, keepdim=True))
            self.optim.zero_grad()
            loss.backward()
            self.optim.step()
            self.global_step += 1
        return loss.item()


def log(msg):
    if get_global_rank() == 0:
        print(msg, flush=True)


def main(save_folder):
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 1)))
    optim = torch.optim.AdamW(model.parameters(), lr=1e-2)
    trainer = Trainer(save_folder, model, optim)
    log("Saving pre-train checkpoint...")
    checkpoint_path = trainer.save_sharded_checkpoint()
    log(f"Checkpoint saved to {checkpoint_path}")
    log("Attempting to load pre-train checkpoint...")
    barrier()
    trainer.restore_sharded_checkpoint(checkpoint_path)
    log("Checkpoint successfully loaded")
    loss = trainer.fit(6)
    print(f"[rank {get_global_rank()}] trained to step {trainer.global_step}, loss {loss:.4f}", flush=True)


def worker():
    save_folder = os.path.join(tempfile.gettempdir(), f"r33_olmo_{os.environ.get('MASTER_PORT', 'x')}")
    if get_global_rank() == 0:
        shutil.rmtree(save_folder, ignore_errors=True)
    barrier()
    main(save_folder)
    barrier()
    if get_global_rank() == 0:
        shutil.rmtree(save_folder, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
