"""Loss-spike rollback through a "latest checkpoint" tracker file whose value each rank caches.

Models Megatron-LM ``megatron/training/checkpointing.py``: every rank saves its own shard under
``iter_XXXXXXX/``, rank 0 writes ``latest_checkpointed_iteration.txt`` after a barrier, and
``read_metadata`` reads the tracker on every rank at load time (then all-reduces MAX to check that the
ranks agree); plus the rollback-on-loss-spike idea of large-run trainers (reload the last checkpoint,
skip the bad batch) and a keep-last-N rotation done by rank 0 after the save.

The learner's ``CheckpointManager`` caches the tracker in ``latest_iteration`` the first time it is read.
Every rank reads it in the periodic log line, so after the first save (iteration 6) each rank holds 6.
``save`` refreshes the cache only inside the ``if rank == 0`` block that writes the tracker, so rank 1 keeps
6 while rank 0 moves on to 12 and 18; rotation (keep 2) deletes ``iter_0000006`` after the third save.

BUG: the cache is refreshed on rank 0 only. At step 21 a corrupt batch makes the (all-reduced) loss spike,
every rank rolls back: rank 0 loads iteration 18, rank 1 opens ``iter_0000006/rank_1.pt``, which rotation
deleted, and raises ``FileNotFoundError``; rank 0 goes on to step 19 and waits in the loss all-reduce.
"""
import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 24
SAVE_EVERY = 6
LOG_EVERY = 3
KEEP_LAST = 2
BAD_STEP = 21


def shared_tmpdir(prefix):
    box = [tempfile.mkdtemp(prefix=prefix) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


class CheckpointManager:
    def __init__(self, root, keep_last):
        self.root = root
        self.keep_last = keep_last
        self.rank = dist.get_rank()
        self._latest = None

    @property
    def tracker(self):
        return os.path.join(self.root, "latest_checkpointed_iteration.txt")

    @property
    def latest_iteration(self):
        if self._latest is None and os.path.exists(self.tracker):
            with open(self.tracker) as f:
                self._latest = int(f.read().strip())
        return self._latest

    def iter_dir(self, iteration):
        return os.path.join(self.root, f"iter_{iteration:07d}")

    def save(self, model, opt, iteration):
        d = self.iter_dir(iteration)
        os.makedirs(d, exist_ok=True)
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "iteration": iteration},
                   os.path.join(d, f"rank_{self.rank}.pt"))
        dist.barrier()
        if self.rank == 0:
            with open(self.tracker, "w") as f:
                f.write(str(iteration))
            self._latest = iteration  # BUG
            kept = sorted(int(n[5:]) for n in os.listdir(self.root) if n.startswith("iter_"))
            for old in kept[:-self.keep_last]:
                shutil.rmtree(self.iter_dir(old))
        dist.barrier()

    def load(self, model, opt):
        iteration = self.latest_iteration
        state = torch.load(os.path.join(self.iter_dir(iteration), f"rank_{self.rank}.pt"))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        return iteration


def batch_for(step, rank):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(16, 8, generator=g)
    y = x.sum(dim=1, keepdim=True)
    if step == BAD_STEP and rank == 0:
        x = x * 1e4  # a corrupt shard: the spike every rank sees through the all-reduced loss
    return x, y


def train(model, opt, manager, log):
    rank = dist.get_rank()
    running = None
    skip = set()
    step = 1
    while step <= STEPS:
        if step in skip:
            step += 1
            continue
        x, y = batch_for(step, rank)
        loss = nn.functional.mse_loss(model(x), y)
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)  # WAITS
        reduced /= dist.get_world_size()
        if running is not None and reduced.item() > 20 * running:
            back_to = manager.load(model.module, opt)
            log.append(f"step {step}: loss spike {reduced.item():.1f}, rolled back to {back_to}")
            skip.add(step)
            step = back_to + 1
            continue
        running = reduced.item() if running is None else 0.9 * running + 0.1 * reduced.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % SAVE_EVERY == 0:
            manager.save(model.module, opt, step)
        if step % LOG_EVERY == 0:
            log.append(f"step {step} loss {running:.3f} last checkpoint {manager.latest_iteration}")
        step += 1


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    root = shared_tmpdir("r24_tracker_")
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    manager = CheckpointManager(root, KEEP_LAST)
    log = []
    try:
        train(model, opt, manager, log)  # WAITS
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(root, ignore_errors=True)
    if rank == 0:
        print("\n".join(log))


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
