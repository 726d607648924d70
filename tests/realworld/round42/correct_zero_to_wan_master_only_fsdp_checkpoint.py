"""Correct: every rank calls ``save_checkpoint``, so every rank joins the all-gathers of the FSDP
``FULL_STATE_DICT``; only rank 0 writes the files.

Source: Bria-AI/Zero-to-Wan PR #1 ("bugfix: checkpoint saving hangup", 2025-04: "removing redundant check for
``master_process`` causing hang-up when saving checkpoint using >1 gpu"); ``training/train.py``: the loop runs
``if global_step % args.checkpoint_every == 0 and global_step > 0 and master_process: save_checkpoint(...)``, while
``save_checkpoint`` opens ``FSDP.state_dict_type(transformer, FULL_STATE_DICT, FullStateDictConfig(offload_to_cpu=True,
rank0_only=True), ...)`` and calls ``transformer.state_dict()`` and ``FSDP.optim_state_dict(...)`` -- all-gathers of
every rank's shards -- and already writes the files only ``if rank <= 0``. Each step the loop also averages the loss
across ranks (``avg_scalar_across_ranks``: an all-reduce) for logging.

Here the parameters of a tiny linear model are sharded over two ranks as FSDP shards them: each step all-gathers the
shards for the forward pass, all-reduces the full gradient and keeps its own slice (FSDP's reduce-scatter), and
all-reduces the loss for the log line. At step 2 rank 0 enters ``save_checkpoint``: its parameter all-gather pairs with
rank 1's step-3 forward all-gather, then rank 0 waits in the optimizer-state all-gather while rank 1 waits in the
gradient all-reduce -- that is the buggy twin.

The fix (the PR): drop ``and master_process`` from the checkpoint condition; ``save_checkpoint`` already writes only
on rank 0.
"""

import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

MAX_STEPS = 4
CHECKPOINT_EVERY = 2
N_FEATURES = 8


class ShardedLinear:
    """A flat parameter split into one equal shard per rank, as FSDP keeps it."""

    def __init__(self, full, rank, world_size):
        self.numel = full.numel()
        self.shard_size = self.numel // world_size
        self.rank = rank
        self.shard = full[rank * self.shard_size:(rank + 1) * self.shard_size].clone()
        self.exp_avg = torch.zeros_like(self.shard)  # the optimizer's state for this shard

    def unshard(self):
        parts = [torch.empty_like(self.shard) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, self.shard)
        return torch.cat(parts)


def avg_scalar_across_ranks(scalar):
    t = torch.tensor([scalar])
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


def train_step(model, x, y):
    full = model.unshard().requires_grad_(True)  # pre-forward all-gather
    loss = torch.nn.functional.mse_loss(x @ full, y)
    loss.backward()
    grad = full.grad.clone()
    dist.all_reduce(grad)
    grad /= dist.get_world_size()
    lo = model.rank * model.shard_size
    g = grad[lo:lo + model.shard_size]
    model.exp_avg.mul_(0.9).add_(g, alpha=0.1)
    model.shard -= 0.05 * model.exp_avg
    return loss.item()


def save_checkpoint(model, global_step, output_dir, rank):
    cpu_state = model.unshard()  # FULL_STATE_DICT, rank0_only=True: still a collective
    parts = [torch.empty_like(model.exp_avg) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, model.exp_avg)
    optim_state = torch.cat(parts)
    save_dir = os.path.join(output_dir, f"checkpoint-{global_step}")
    os.makedirs(save_dir, exist_ok=True)
    if rank <= 0:
        torch.save(cpu_state, os.path.join(save_dir, "diffusion_pytorch_model.pt"))
        torch.save(optim_state, os.path.join(save_dir, "optimizer.pt"))


def train(model, x, y, output_dir, rank):
    master_process = rank == 0
    for global_step in range(MAX_STEPS):
        loss = train_step(model, x, y)
        diffusion_loss_avg = avg_scalar_across_ranks(loss)
        if master_process:
            print(f"step {global_step}: loss {diffusion_loss_avg:.4f}")
        if global_step % CHECKPOINT_EVERY == 0 and global_step > 0:
            save_checkpoint(model, global_step, output_dir, rank)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = ShardedLinear(torch.randn(N_FEATURES), rank, world_size)
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(16, N_FEATURES, generator=g), torch.randn(16, generator=g)
    box = [tempfile.mkdtemp(prefix="bl_r42_wan_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    try:
        train(model, x, y, box[0], rank)
        print(f"rank {rank}: training done")
    finally:
        if rank == 0:
            shutil.rmtree(box[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
