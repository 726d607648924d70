"""Round 22: pipeline peers computed as ``rank - 1`` / ``rank + 1`` on a 2-D (pp, dp) device mesh.

Models: torchtitan ``ParallelDims.build_mesh`` (the world mesh is built with ``pp`` as the outermost dimension, so
the two stages of one data-parallel replica are ``dp_size`` ranks apart) and its pipeline code, which talks to
peers through ``world_mesh["pp"].get_group()`` and group ranks; Megatron-LM ``parallel_state``
(``get_pipeline_model_parallel_next_rank`` / ``prev_rank`` read the rank list of the pipeline group);
``torch.distributed.device_mesh.init_device_mesh`` and ``torch.distributed.get_global_rank``; the pytorch
``dist_tuto`` send/recv examples that use ``rank + 1`` in a one-dimensional world.

What it does: four processes form a (pp=2, dp=2) mesh.  Each step, a stage-0 rank runs the first half of a small MLP
on its micro-batch and sends the activations to its stage-1 peer; the stage-1 rank computes the loss and sends the
activation gradient back; then each stage averages its gradients over its data-parallel group.

The bug: the peers are computed as in a pure pipeline run, ``rank + 1`` / ``rank - 1``.  On this mesh ranks 0 and 1
are both stage 0 (dp 0 and dp 1) and ranks 2 and 3 both stage 1.  Rank 1's activations reach rank 2 (wrong replica,
but shapes match) and rank 2's gradient goes back to rank 1, so that pair runs on; rank 0's send to rank 1 is never
received and rank 3 waits for a send from rank 2 that never comes.  Ranks 1 and 2 then wait in their
data-parallel all-reduce for ranks 0 and 3: all four wait until the timeout.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 20
PP, DP = 2, 2
STEPS = 3


def build_mesh():
    # torchtitan order: pp outermost, then data parallel
    return init_device_mesh("cpu", (PP, DP), mesh_dim_names=("pp", "dp"))


def pipeline_peers(mesh):
    rank = dist.get_rank()
    stage = mesh.get_local_rank("pp")
    prev_rank, next_rank = rank - 1, rank + 1  # BUG
    if stage == 0:
        prev_rank = None
    if stage == PP - 1:
        next_rank = None
    return stage, prev_rank, next_rank


def make_stage(stage):
    torch.manual_seed(stage)  # both replicas of a stage start equal
    if stage == 0:
        return nn.Sequential(nn.Linear(6, 12), nn.Tanh())
    return nn.Linear(12, 1)


def micro_batch(step, dp_rank):
    g = torch.Generator().manual_seed(10 * step + dp_rank)
    x = torch.randn(4, 6, generator=g)
    return x, x.sum(dim=1, keepdim=True)


def allreduce_grads(module, dp_group):
    for p in module.parameters():
        dist.all_reduce(p.grad, group=dp_group)  # WAITS
        p.grad /= DP


def train_step(step, stage_mod, opt, stage, prev_rank, next_rank, dp_rank, dp_group):
    opt.zero_grad()
    x, y = micro_batch(step, dp_rank)
    if stage == 0:
        h = stage_mod(x)
        dist.send(h.detach(), dst=next_rank)  # WAITS
        grad = torch.empty_like(h)
        dist.recv(grad, src=next_rank)
        h.backward(grad)
        loss = None
    else:
        h = torch.empty(4, 12)
        dist.recv(h, src=prev_rank)  # WAITS
        h.requires_grad_(True)
        loss = nn.functional.mse_loss(stage_mod(h), y)
        loss.backward()
        dist.send(h.grad, dst=prev_rank)
    allreduce_grads(stage_mod, dp_group)  # WAITS
    opt.step()
    return loss


def worker():
    mesh = build_mesh()
    stage, prev_rank, next_rank = pipeline_peers(mesh)
    dp_rank = mesh.get_local_rank("dp")
    dp_group = mesh.get_group("dp")
    stage_mod = make_stage(stage)
    opt = torch.optim.SGD(stage_mod.parameters(), lr=0.05)
    for step in range(STEPS):
        loss = train_step(step, stage_mod, opt, stage, prev_rank, next_rank, dp_rank, dp_group)  # WAITS
        if loss is not None and dp_rank == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
