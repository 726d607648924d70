"""Modelled on KempnerInstitute/KempnerForge issue #49 ("Race in CheckpointManager save and load collectives";
``kempnerforge/checkpoint/manager.py``, ``CheckpointManager.save`` / ``load`` / ``_resolve_load_path``).

What the code does: each rank trains a small regression model, all-reducing its gradients by hand after every
backward. A ``CheckpointManager`` saves into ``{dir}/step_{N}/``: every rank writes its own model/optimizer shard
(standing in for DCP's per-rank files), and rank 0 alone writes the non-distributed training state
(``train_state.pt``: step, tokens seen, scheduler), ``metadata.json`` and the ``latest`` link. The item saves at
step 3 and then resumes from that checkpoint, as a requeued job on the same allocation does. Rank 0's writes go
through a slow shared filesystem: the state file is written in slices to a ``.part`` name and appears under its
real name only when the write is complete.

The correct version of ``buggy_kempnerforge_train_state_exists_diverges``, with the issue's fix: ``save()`` ends
with a ``dist.barrier()`` so every rank returns only after rank 0's commits, and in ``load()`` rank 0's
``exists()`` decides for the group -- the flag is broadcast, only rank 0 calls ``torch.load``, and the existing
object broadcast hands the state to everyone else.
"""

import datetime
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

_TRAIN_STATE_FILE = "train_state.pt"
_METADATA_FILE = "metadata.json"


def slow_shared_write(obj, path, slices=6, delay=0.5):
    """Write ``obj`` the way a slow network filesystem makes it visible: slice by slice, then renamed."""
    tmp = path.with_name(path.name + ".part")
    torch.save(obj, tmp)
    for _ in range(slices):
        time.sleep(delay)
    os.replace(tmp, path)


class CheckpointManager:
    def __init__(self, base_dir, model, optimizer):
        self.base_dir = Path(base_dir)
        self.model = model
        self.optimizer = optimizer
        self._rank = dist.get_rank()

    def _checkpoint_dir(self, step):
        return self.base_dir / f"step_{step}"

    def save(self, step, tokens_seen, scheduler):
        ckpt_dir = self._checkpoint_dir(step)
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        shard = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}
        torch.save(shard, ckpt_dir / f"shard_{self._rank}.pt")
        if self._rank == 0:
            train_state = {"step": step, "tokens_seen": tokens_seen, "scheduler": scheduler.state_dict()}
            slow_shared_write(train_state, ckpt_dir / _TRAIN_STATE_FILE)
            (ckpt_dir / _METADATA_FILE).write_text(json.dumps({"step": step, "tokens_seen": tokens_seen}))
            tmp_link = self.base_dir / "latest.tmp"
            tmp_link.unlink(missing_ok=True)
            tmp_link.symlink_to(ckpt_dir.name)
            tmp_link.rename(self.base_dir / "latest")
        # every rank observes rank 0's filesystem commits before returning
        dist.barrier()

    def load(self, path, scheduler):
        ckpt_dir = Path(path)
        shard = torch.load(ckpt_dir / f"shard_{self._rank}.pt", weights_only=True)
        self.model.load_state_dict(shard["model"])
        self.optimizer.load_state_dict(shard["optimizer"])

        train_state_path = ckpt_dir / _TRAIN_STATE_FILE
        has_state = [train_state_path.exists() if self._rank == 0 else None]
        dist.broadcast_object_list(has_state, src=0)
        if has_state[0]:
            train_state = torch.load(train_state_path, weights_only=True) if self._rank == 0 else None
            object_list = [train_state]
            dist.broadcast_object_list(object_list, src=0)
            train_state = object_list[0]
            scheduler.load_state_dict(train_state["scheduler"])
            return train_state["step"], train_state["tokens_seen"]
        return 0, 0


def train_step(model, optimizer, scheduler, batch):
    inputs, targets = batch
    loss = nn.functional.mse_loss(model(inputs), targets)
    optimizer.zero_grad()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()
    optimizer.step()
    scheduler.step()
    return loss.item()


def worker():
    rank = dist.get_rank()
    holder = [tempfile.mkdtemp(prefix="r50_kforge_") if rank == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    base_dir = holder[0]

    gen = torch.Generator().manual_seed(rank)
    batches = [(torch.randn(8, 4, generator=gen), torch.randn(8, 1, generator=gen)) for _ in range(6)]

    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    for step in range(1, 4):
        train_step(model, optimizer, scheduler, batches[step - 1])
    CheckpointManager(base_dir, model, optimizer).save(step=3, tokens_seen=3 * 8, scheduler=scheduler)

    # the requeued job: fresh objects, resume from the step-3 checkpoint, train on
    torch.manual_seed(1)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    manager = CheckpointManager(base_dir, model, optimizer)
    start, tokens = manager.load(Path(base_dir) / "step_3", scheduler)
    print(f"rank {rank}: resumed at step {start} ({tokens} tokens), lr {scheduler.get_last_lr()[0]:.4f}", flush=True)
    for step in range(start + 1, 7):
        loss = train_step(model, optimizer, scheduler, batches[step - 1])
    print(f"rank {rank}: finished at step 6, loss {loss:.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(base_dir)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
