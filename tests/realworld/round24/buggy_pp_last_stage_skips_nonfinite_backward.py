"""A two-stage pipeline whose last stage skips the backward of a micro-batch with a non-finite loss.

Models the ISEEKYAN/Megatron-LM PR #209 description ("``pipeline.py`` skipped ``backward`` whenever the last
stage had no local loss ... a stage ... could return without joining the backward collectives while its
peers waited"; Megatron Core's ``backward_step`` gates on the output, not on the local loss), Megatron's
``check_for_nan_in_loss`` / the skip-bad-batch habit of fp16 trainers, and the point-to-point pipeline of
the PyTorch ``dist_tuto`` (blocking ``send`` / ``recv`` between neighbour stages).

Rank 0 holds the first stage (inputs), rank 1 the last stage (head, labels, loss). Each step runs two
micro-batches forward-then-backward: stage 0 sends activations and receives their gradient, stage 1
receives activations, computes the loss, backpropagates and sends the gradient back. At step 4 one label
of micro-batch 1 is NaN (a corrupt row of the label file).

BUG: the last stage "skips the bad micro-batch" with ``continue`` when ``torch.isfinite(loss)`` is False,
a decision only it can see. It moves on to receive the next micro-batch's activations while stage 0 waits
for the skipped micro-batch's gradient: both ranks wait in ``recv``.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 6
MICRO_BATCHES = 2
MB_SIZE = 4
BAD_STEP = 4
HIDDEN = 16


def micro_batch(step, mb):
    g = torch.Generator().manual_seed(100 * step + mb)
    x = torch.randn(MB_SIZE, 8, generator=g)
    y = x[:, :4].sum(dim=1, keepdim=True)
    if step == BAD_STEP and mb == 1:
        y[2, 0] = float("nan")
    return x, y


def run_first_stage(stage, opt):
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        for mb in range(MICRO_BATCHES):
            x, _ = micro_batch(step, mb)
            act = stage(x)
            dist.send(act.detach(), dst=1)
            grad = torch.empty_like(act)
            dist.recv(grad, src=1)  # WAITS
            act.backward(grad)
        opt.step()


def run_last_stage(stage, opt, log):
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        losses = []
        for mb in range(MICRO_BATCHES):
            _, y = micro_batch(step, mb)
            act = torch.empty(MB_SIZE, HIDDEN)
            dist.recv(act, src=0)  # WAITS
            act.requires_grad_(True)
            loss = nn.functional.mse_loss(stage(act), y) / MICRO_BATCHES
            if not torch.isfinite(loss):
                log.append(f"step {step} micro-batch {mb}: non-finite loss, skipped")
                continue  # BUG
            loss.backward()
            dist.send(act.grad, dst=0)
            losses.append(loss.item())
        opt.step()
        log.append(f"step {step} loss {sum(losses):.4f}")


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    first = nn.Sequential(nn.Linear(8, HIDDEN), nn.ReLU())
    last = nn.Linear(HIDDEN, 1)
    log = []
    if rank == 0:
        run_first_stage(first, torch.optim.SGD(first.parameters(), lr=0.05))  # WAITS
    else:
        run_last_stage(last, torch.optim.SGD(last.parameters(), lr=0.05), log)  # WAITS
        print("\n".join(log))
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
