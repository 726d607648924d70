"""Three-stage pipeline whose first stage sends the labels straight to the last stage (correct).

Models: the point-to-point pattern of pytorch/tutorials ``intermediate_source/dist_tuto.rst`` (blocking
``dist.send`` / ``dist.recv`` with explicit peers) applied to a hand-written pipeline, as in the
"labels live on the first stage, the loss on the last" layout that torch.distributed.pipelining and
Megatron-LM solve with a side channel; ``torch.distributed.recv``'s docstring: ``src`` -- "Will receive from any
process if unspecified".

Each step: stage 0 posts the labels to stage 2 with ``isend``, runs its layer and sends the activations to stage 1; stage 1 forwards
to stage 2; stage 2 computes the loss and the gradients flow back. Every ``recv`` names its peer, so stage 2 takes
the activations from stage 1 and the labels from stage 0 regardless of which arrives first.
"""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20

MB, IN, HID, CLASSES, STEPS = 4, 8, 16, 3, 4


def build_stage(rank):
    torch.manual_seed(100 + rank)
    if rank == 0:
        return nn.Sequential(nn.Linear(IN, HID), nn.ReLU())
    if rank == 1:
        return nn.Sequential(nn.Linear(HID, HID), nn.ReLU())
    return nn.Linear(HID, CLASSES)


def get_batch(step):
    g = torch.Generator().manual_seed(step)
    return torch.randn(MB, IN, generator=g), torch.randint(0, CLASSES, (MB,), generator=g)


def recv_activations(prev_rank):
    buf = torch.empty(MB, HID)
    dist.recv(buf, src=prev_rank)
    return buf.requires_grad_()


def train_step(rank, stage, opt, step):
    opt.zero_grad()
    if rank == 0:
        x, y = get_batch(step)
        label_req = dist.isend(y, dst=2)  # labels go straight to the loss stage
        h = stage(x)
        dist.send(h.detach(), dst=1)
        grad = torch.empty(MB, HID)
        dist.recv(grad, src=1)
        h.backward(grad)
        label_req.wait()
        loss = None
    elif rank == 1:
        h_in = recv_activations(0)
        h = stage(h_in)
        dist.send(h.detach(), dst=2)
        grad = torch.empty(MB, HID)
        dist.recv(grad, src=2)
        h.backward(grad)
        dist.send(h_in.grad, dst=0)
        loss = None
    else:
        h_in = recv_activations(1)
        y = torch.empty(MB, dtype=torch.long)
        dist.recv(y, src=0)
        loss = nn.functional.cross_entropy(stage(h_in), y)
        loss.backward()
        dist.send(h_in.grad, dst=1)
    opt.step()
    return loss


def worker():
    rank = dist.get_rank()
    stage = build_stage(rank)
    opt = torch.optim.SGD(stage.parameters(), lr=0.1)
    for step in range(STEPS):
        loss = train_step(rank, stage, opt, step)
        if loss is not None:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
