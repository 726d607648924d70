"""Gradient all-reduce from post-accumulate-grad hooks, task heads run in a fixed order (correct).

Models the PyTorch tutorial "How to save memory by fusing the optimizer step into the backward pass"
(``Tensor.register_post_accumulate_grad_hook``, one hook per parameter, run as soon as that parameter's gradient
is accumulated) used, as learners do, to overlap communication with backward by all-reducing each gradient in its
hook; and the DDP design note ("Internal Design" in the DDP notes: all processes must launch the all-reduces in
the same order, which DDP gets from the parameters' registration order, not from the order autograd reaches
them). The model is a shared encoder with one head per task in an ``nn.ModuleDict`` (the multi-task fine-tuning
layout of e.g. MT-DNN / jiant).

Every rank runs every head, in the ``ModuleDict``'s order, on every batch (rows of other tasks are masked out of
that head's loss; a head with no rows of its task contributes ``0 * sum``), so the autograd graph, and with it
the order in which the hooks fire, is the same on every rank whatever the batch's task mix. The batches stand in
for a task-mixing sampler: rank 0's batches list the sentiment rows first, rank 1's the topic rows.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

TASKS = ("sentiment", "topic")
NUM_LABELS = {"sentiment": 2, "topic": 5}
STEPS = 6


class MultiTaskModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(12, 24), nn.Tanh())
        self.heads = nn.ModuleDict({task: nn.Linear(24, NUM_LABELS[task]) for task in TASKS})

    def forward(self, x, task_ids, labels):
        hidden = self.encoder(x)
        loss = hidden.new_zeros(())
        for index, (task, head) in enumerate(self.heads.items()):
            logits = head(hidden)
            rows = task_ids == index
            if rows.any():
                loss = loss + F.cross_entropy(logits[rows], labels[rows] % NUM_LABELS[task])
            else:
                loss = loss + 0.0 * logits.sum()
        return loss


def install_grad_allreduce_hooks(model):
    world = dist.get_world_size()

    def allreduce_hook(param):
        dist.all_reduce(param.grad)
        param.grad.div_(world)

    for param in model.parameters():
        param.register_post_accumulate_grad_hook(allreduce_hook)


def task_mixed_batch(rank, step):
    """Stand-in for the task-mixing sampler: 4 rows of each task, in a rank-dependent order."""
    g = torch.Generator().manual_seed(100 * rank + step)
    first, second = (0, 1) if (rank + step) % 2 == 0 else (1, 0)
    task_ids = torch.tensor([first] * 4 + [second] * 4)
    return torch.randn(8, 12, generator=g), task_ids, torch.randint(0, 10, (8,), generator=g)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = MultiTaskModel()
    for param in model.parameters():
        dist.broadcast(param.data, src=0)
    install_grad_allreduce_hooks(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for step in range(STEPS):
        x, task_ids, labels = task_mixed_batch(rank, step)
        loss = model(x, task_ids, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)

    checksum = torch.stack([p.detach().sum() for p in model.parameters()]).sum().reshape(1)
    gathered = [torch.zeros(1) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, checksum)
    assert all(torch.allclose(g, gathered[0]) for g in gathered), f"replicas differ: {gathered}"
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
