"""Keep-last-k checkpoint purging on a shared file system, done by global rank 0 only while every node's local
main process still writes the checkpoint (``save_on_each_node``).

Models: huggingface/transformers issue #20988 (rotation per node on a shared folder) and the fix its thread
points to, deleting on the world's main process only; pytorch/torchtitan issue #909 (``_purge_stale_checkpoints``
on NFS); verl-project/verl PR #7989 ("serialize directory-level cleanup on global rank 0") and
PrimeIntellect-ai/prime-rl PR #1763 ("only master rank deletes to avoid race condition").

What it does: 4 ranks stand for 2 nodes of 2 (``GPUS_PER_NODE = 2``; the local rank is ``rank % 2`` unless
``SLURM_LOCALID`` is set). They train a small DDP model and save every 2 steps into one output folder that
both nodes see. Each node's local main process writes the weights through a per-rank temporary name and
``os.replace`` (two nodes writing the same checkpoint is harmless); every rank waits at the save barrier; then
global rank 0 alone removes the checkpoint that fell out of the last ``KEEP = 2``.
"""

import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 20

GPUS_PER_NODE = 2
SAVE_EVERY = 2
KEEP = 2
STEPS = 10
SAVE_ON_EACH_NODE = True


def local_rank():
    if "SLURM_LOCALID" in os.environ:
        return int(os.environ["SLURM_LOCALID"])
    return dist.get_rank() % GPUS_PER_NODE


def should_save():
    """TrainingArguments.should_save."""
    if SAVE_ON_EACH_NODE:
        return local_rank() == 0
    return dist.get_rank() == 0


def checkpoint_path(output_dir, step):
    return os.path.join(output_dir, f"step-{step}.pt")


def save_checkpoint(model, output_dir, step):
    if should_save():
        tmp = checkpoint_path(output_dir, step) + f".tmp{dist.get_rank()}"
        torch.save(model.module.state_dict(), tmp)
        os.replace(tmp, checkpoint_path(output_dir, step))
    dist.barrier()


def purge_stale_checkpoints(output_dir, step):
    stale = step - KEEP * SAVE_EVERY
    if stale <= 0:
        return
    if dist.get_rank() == 0:  # one deleter for the shared folder, whatever should_save() says
        os.remove(checkpoint_path(output_dir, stale))


def train(model, optimizer, output_dir):
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        x = torch.randn(16, 12, generator=g)
        loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % SAVE_EVERY == 0:
            save_checkpoint(model, output_dir, step)
            purge_stale_checkpoints(output_dir, step)
            if rank == 0:
                kept = sorted(f for f in os.listdir(output_dir) if f.endswith(".pt"))
                print(f"step {step}: loss {loss.item():.3f}, kept {kept}", flush=True)


def worker():
    rank = dist.get_rank()
    name = [tempfile.mkdtemp(prefix="r25_purge_") if rank == 0 else None]
    dist.broadcast_object_list(name, src=0)
    output_dir = name[0]
    try:
        torch.manual_seed(0)
        model = DDP(nn.Linear(12, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        train(model, optimizer, output_dir)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(output_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
