"""Checkpoint-directory setup and per-rank shard saves ordered by barriers: only the main process deletes
and creates directories, and every rank waits for it before touching them.

Source: Physical-Intelligence/openpi PR #969 ("Fix checkpoint directory race condition in DDP training", for
issue #868: with ``--overwrite`` every rank ran ``shutil.rmtree`` on the checkpoint directory in
scripts/train_pytorch.py ``train_loop`` and the losers died with ``FileNotFoundError``): only the main process
deletes and creates the directory, "all ranks synchronize on ``dist.barrier()`` after directory setup", and
resume detection stays on every rank, read-only. The per-rank shard save follows the same rule, as the fix
of karpathy/nanochat PR #336 needs it (rank 0 makes the step directory, then every rank writes its shard) and
as pytorch/pytorch PR #196591 lists the races ("delete-under-you", "recreate-under-you"). Here: two short
runs of a toy DDP model in one job, both launched with ``overwrite=True`` (the second over the first's
directory, the first over whatever an earlier job left); each run saves a step directory with rank 0's model file, one optimizer shard per rank and a ``COMPLETE`` marker.

Correct: every directory operation of rank 0 is followed by a barrier that all ranks reach before they read
or write inside it, and the marker is written only after a second barrier, once every shard is on disk.
"""

import os
import shutil

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5
STEPS = 2


def setup_checkpoint_dir(checkpoint_dir, overwrite, is_main):
    if is_main:
        if overwrite and os.path.exists(checkpoint_dir):
            shutil.rmtree(checkpoint_dir)
        os.makedirs(checkpoint_dir, exist_ok=True)
    dist.barrier()
    completed = [d for d in os.listdir(checkpoint_dir) if os.path.exists(os.path.join(checkpoint_dir, d, "COMPLETE"))]
    return max(completed, default=None)


def save_checkpoint(checkpoint_dir, step, model, optimizer, is_main):
    step_dir = os.path.join(checkpoint_dir, f"step_{step:06d}")
    if is_main:
        os.makedirs(step_dir)
        torch.save(model.module.state_dict(), os.path.join(step_dir, "model.pt"))
    dist.barrier()
    torch.save(optimizer.state_dict(), os.path.join(step_dir, f"optim_rank{dist.get_rank()}.pt"))
    dist.barrier()
    if is_main:
        open(os.path.join(step_dir, "COMPLETE"), "w").close()


def train_run(checkpoint_dir, overwrite, seed):
    rank = dist.get_rank()
    is_main = rank == 0
    latest = setup_checkpoint_dir(checkpoint_dir, overwrite, is_main)
    torch.manual_seed(seed)
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(seed + rank)
    for _ in range(STEPS):
        x = torch.randn(8, 4, generator=generator)
        loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    save_checkpoint(checkpoint_dir, STEPS + seed, model, optimizer, is_main)
    return latest


def worker():
    import r5_common

    checkpoint_dir = os.path.join(r5_common.shared_dir("openpi"), "checkpoints", "pi0_toy")
    first = train_run(checkpoint_dir, overwrite=True, seed=0)
    second = train_run(checkpoint_dir, overwrite=True, seed=10)
    assert first is None and second is None, (first, second)
    dist.barrier()
    assert sorted(os.listdir(checkpoint_dir)) == ["step_000012"], os.listdir(checkpoint_dir)
    step_dir = os.path.join(checkpoint_dir, "step_000012")
    assert sorted(os.listdir(step_dir)) == ["COMPLETE", "model.pt", "optim_rank0.pt", "optim_rank1.pt"]
    return os.listdir(step_dir)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
