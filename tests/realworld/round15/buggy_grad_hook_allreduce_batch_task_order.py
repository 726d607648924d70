"""Gradient all-reduce from post-accumulate-grad hooks, task heads run in the batch's order (buggy).

Models the PyTorch tutorial "How to save memory by fusing the optimizer step into the backward pass"
(``Tensor.register_post_accumulate_grad_hook``, one hook per parameter, run as soon as that parameter's gradient
is accumulated) used, as learners do, to overlap communication with backward by all-reducing each gradient in its
hook; and the DDP design note ("Internal Design" in the DDP notes: all processes must launch the all-reduces in
the same order, which DDP gets from the parameters' registration order, not from the order autograd reaches
them). The model is a shared encoder with one head per task in an ``nn.ModuleDict`` (the multi-task fine-tuning
layout of e.g. MT-DNN / jiant).

The batches stand in for a task-mixing sampler: every batch has rows of both tasks, rank 0's listing the
sentiment rows first in step 0, rank 1's the topic rows.

Bug: ``forward`` runs the heads in the order their tasks first appear in the batch (``dict.fromkeys``). Autograd
reaches the head used last first, so in step 0 rank 0's first hook all-reduces the topic head's bias (5 values)
while rank 1's all-reduces the sentiment head's bias (2 values): the ranks' all-reduces are paired across
different parameters; gloo aborts on the size mismatch (on NCCL this would silently mix gradients or hang).
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "buggy"
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
        for index in dict.fromkeys(task_ids.tolist()):  # BUG
            task = TASKS[index]
            rows = task_ids == index
            logits = self.heads[task](hidden[rows])
            loss = loss + F.cross_entropy(logits, labels[rows] % NUM_LABELS[task])
        return loss


def install_grad_allreduce_hooks(model):
    world = dist.get_world_size()

    def allreduce_hook(param):
        dist.all_reduce(param.grad)  # WAITS
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
        loss.backward()  # WAITS
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
    worker()  # WAITS
    dist.destroy_process_group()
