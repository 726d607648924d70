"""A two-stage pipeline whose last stage answers a non-finite loss with a zero gradient and a skip flag.

Models the ISEEKYAN/Megatron-LM PR #209 fix ("Backward participation follows the output, not the local
loss": every stage takes part in the backward of every micro-batch), Megatron's ``check_for_nan_in_loss``
/ the skip-bad-batch habit of fp16 trainers, and the point-to-point pipeline of the PyTorch ``dist_tuto``.

Rank 0 holds the first stage, rank 1 the last stage (head, labels, loss). Each step runs two micro-batches
forward-then-backward. At step 4 one label of micro-batch 1 is NaN. Correct: the last stage still answers
every micro-batch: with a non-finite loss it sends a zero gradient, and with every gradient it sends a
skip flag; both stages then skip the optimizer step of that step, so the ranks stay in step.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
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
        skip_step = False
        for mb in range(MICRO_BATCHES):
            x, _ = micro_batch(step, mb)
            act = stage(x)
            dist.send(act.detach(), dst=1)
            grad = torch.empty_like(act)
            dist.recv(grad, src=1)
            skip = torch.zeros(1)
            dist.recv(skip, src=1)
            skip_step = skip_step or bool(skip.item())
            act.backward(grad)
        if not skip_step:
            opt.step()


def run_last_stage(stage, opt, log):
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        losses = []
        skip_step = False
        for mb in range(MICRO_BATCHES):
            _, y = micro_batch(step, mb)
            act = torch.empty(MB_SIZE, HIDDEN)
            dist.recv(act, src=0)
            act.requires_grad_(True)
            loss = nn.functional.mse_loss(stage(act), y) / MICRO_BATCHES
            if torch.isfinite(loss):
                loss.backward()
                dist.send(act.grad, dst=0)
                dist.send(torch.zeros(1), dst=0)
                losses.append(loss.item())
            else:
                log.append(f"step {step} micro-batch {mb}: non-finite loss, step skipped on both stages")
                skip_step = True
                dist.send(torch.zeros_like(act), dst=0)
                dist.send(torch.ones(1), dst=0)
        if skip_step:
            opt.zero_grad()
        else:
            opt.step()
            log.append(f"step {step} loss {sum(losses):.4f}")


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    first = nn.Sequential(nn.Linear(8, HIDDEN), nn.ReLU())
    last = nn.Linear(HIDDEN, 1)
    log = []
    if rank == 0:
        run_first_stage(first, torch.optim.SGD(first.parameters(), lr=0.05))
    else:
        run_last_stage(last, torch.optim.SGD(last.parameters(), lr=0.05), log)
        print("\n".join(log))
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
