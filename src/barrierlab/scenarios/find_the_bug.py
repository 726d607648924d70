"""Find the bug: a small training loop whose rank-0-only evaluation hides a collective."""

import os
import time

import torch
import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def average(value):
    """The mean of ``value`` over all ranks."""
    total = torch.tensor([float(value)])
    dist.all_reduce(total)
    return total.item() / dist.get_world_size()


#: Set by notebook 04's check in one of its runs: every rank but 0 takes this many seconds longer over its
#: validation loss, so that a rank 0 whose result only timing ordered (it read before a wait) shows it.
HOLD_BACK = "BARRIERLAB_NB04_HOLD_BACK"


def local_loss(model, rank):
    """Validation loss of ``model`` on this rank's share of the validation set."""
    generator = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(16, 4, generator=generator)
    with torch.no_grad(), span("validation loss"):  # recorded: the exercise check asks who computed it
        loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean().item()
        if rank != 0 and os.environ.get(HOLD_BACK):
            time.sleep(float(os.environ[HOLD_BACK]))
        return loss


def evaluate(model, rank):
    """Validation loss of ``model``, averaged over every rank's share of the validation set."""
    return average(local_loss(model, rank))


def train_step(model, rank, step, lr=0.1):
    generator = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(16, 4, generator=generator)
    loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            dist.all_reduce(p.grad)  # what DDP does for you: average the gradients
            p -= lr * p.grad / dist.get_world_size()
            p.grad = None


def scenario(steps=4):
    rank = dist.get_rank()
    torch.manual_seed(0)  # same initial weights on every rank
    model = torch.nn.Linear(4, 1)
    val_loss = None
    for step in range(1, steps + 1):
        with span("train"):
            train_step(model, rank, step)
    if rank == 0:
        with span("eval"):
            val_loss = evaluate(model, rank)
        print(f"validation loss after {steps} steps: {val_loss:.4f}")
    return val_loss


if __name__ == "__main__":
    torchrun_main(scenario)
