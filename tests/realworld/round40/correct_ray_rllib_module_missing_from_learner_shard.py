"""RLlib multi-agent learning with several Learners, gradients synchronised over every module on every Learner.

Source: ray-project/ray issue #63819 (a Learner whose shard lacks a policy skips that policy's DDP all-reduce) and the
fix shape of ray-project/ray PR #59544 (``rllib/algorithms/impala/torch/impala_torch_learner.py``): forward and
backward run under ``no_sync`` on every DDP module, then the Learner all-reduces the gradients of *all* parameters of
*all* modules itself, in one fixed order, zero-filling ``param.grad is None`` on the "incomplete" rank and dividing by
the number of Learners that actually had data for the module (counted by another all-reduce).

Three Learners train policies ``main`` and ``minority``; Learner 2's shard has no ``minority`` rows. Every Learner
makes the same collective calls, so the update completes and the replicas stay identical.
"""

import contextlib

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 15

MODULE_IDS = ("main", "minority")


def make_modules():
    torch.manual_seed(0)
    modules = {"main": torch.nn.Linear(4, 3), "minority": torch.nn.Linear(4, 5)}
    return {mid: DDP(m) for mid, m in modules.items()}


def shard_for(rank, step):
    g = torch.Generator().manual_seed(100 * step + rank)
    batch = {"main": torch.randn(6, 4, generator=g)}
    if rank != 2:
        batch["minority"] = torch.randn(2, 4, generator=g)
    return batch


def compute_losses(modules, batch):
    losses = {}
    for mid in batch:
        if mid in modules:
            out = modules[mid](batch[mid])
            losses[mid] = out.pow(2).mean()
    return losses


def compute_gradients(modules, batch):
    with contextlib.ExitStack() as stack:
        for m in modules.values():
            stack.enter_context(m.no_sync())
        losses = compute_losses(modules, batch)
        total_loss = sum(losses.values())
        total_loss.backward()
    for mid in MODULE_IDS:  # every module, same order, on every Learner
        contributors = torch.tensor([1.0 if mid in losses else 0.0])
        dist.all_reduce(contributors)
        for p in modules[mid].parameters():
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            dist.all_reduce(p.grad)
            p.grad /= max(contributors.item(), 1.0)
    return {mid: loss.item() for mid, loss in losses.items()}


def update(modules, optimizer, batch):
    optimizer.zero_grad()
    stats = compute_gradients(modules, batch)
    optimizer.step()
    return stats


def worker():
    rank = dist.get_rank()
    modules = make_modules()
    params = [p for m in modules.values() for p in m.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.1)
    for step in range(3):
        stats = update(modules, optimizer, shard_for(rank, step))
        print(f"[learner {rank}] step {step}: " + ", ".join(f"{k}={v:.4f}" for k, v in sorted(stats.items())),
              flush=True)
    checksum = sum(p.detach().sum().item() for m in modules.values() for p in m.parameters())
    print(f"[learner {rank}] weights checksum {checksum:.6f}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
