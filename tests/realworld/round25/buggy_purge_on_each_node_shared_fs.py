"""Keep-last-k checkpoint purging done by the local main process of every node, on a file system the nodes share.

Models: huggingface/transformers issue #20988 ("[Multi-node setup] Race condition on deleting checkpoint when
using shared filesystem and save_total_limit=1": with ``save_on_each_node=True``, ``args.should_save`` is true on
every node's local process 0, so ``_rotate_checkpoints`` runs once per node on the same folder), issue #13035
(``_rotate_checkpoints``' ``shutil.rmtree`` failing); pytorch/torchtitan issue #909 (``keep_latest_k`` on an NFS
folder, ``_purge_stale_checkpoints`` failing with ``FileNotFoundError`` on a rank other than 0);
verl-project/verl PR #7989 and PrimeIntellect-ai/prime-rl PR #1763 ("only master rank deletes to avoid race
condition"); OLMo-core's ``get_fs_local_rank``.

What it does: 4 ranks stand for 2 nodes of 2 (``GPUS_PER_NODE = 2``; the local rank is ``rank % 2`` unless
``LOCAL_RANK``-style ``SLURM_LOCALID`` is set). They train a small DDP model and save every 2 steps into one
output folder (a shared file system: both nodes see the same path). The saving ranks write the weights through
a per-rank temporary name and ``os.replace`` (so two nodes writing the same checkpoint is harmless); every rank
waits at the save barrier; then the purge removes the checkpoint that fell out of the last ``KEEP = 2``.

The bug: the save flag is "local main process" (``save_on_each_node``), and the purge is gated on the same flag.
At step 6 both node masters (ranks 0 and 2) unlink ``step-2.pt``: exactly one unlink succeeds, the other master
fails with ``FileNotFoundError`` (which of the two varies); the other three ranks wait in step 7's gradient
all-reduce (``loss.backward()``).
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
    if should_save():  # BUG
        os.remove(checkpoint_path(output_dir, stale))


def train(model, optimizer, output_dir):
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        x = torch.randn(16, 12, generator=g)
        loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # WAITS
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
        train(model, optimizer, output_dir)  # WAITS
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(output_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
