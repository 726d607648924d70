"""A per-head gradient-norm monitor for a multi-task model, built on module backward hooks that all-reduce the
norm over the ranks; a head's hook fires only in a step whose batch had samples of that head's task.

Models: bigscience-workshop/Megatron-DeepSpeed ``megatron/debug_utils.py`` ``DebugGradientNorm``
(``register_full_backward_hook`` on each module, the norm of ``grad_outputs``), NeMo's ``debug_info`` forward /
backward hooks, with the norm made global by an ``all_reduce`` inside the hook; multi-task heads that are skipped
when the batch has no labels for them (MT-DNN-style task heads, detection models' optional heads) under
``DistributedDataParallel(find_unused_parameters=True)``; the ``register_full_backward_hook`` docs ("called every
time the gradients with respect to a module are computed").

What it does: 2 ranks train a shared trunk with a classification head and a regression head (DDP, unused
parameters allowed) for 4 steps. Each rank draws the task of each of its 6 samples from its own generator (about
a quarter regression); a head runs only if the batch has its task. The monitor's hook on each head all-reduces
the squared norm of the head's output gradient; rank 0 logs the norms.

The bug: how many hooks fire in a step depends on the rank's batch. In step 2 rank 1's batch has no regression
sample: rank 1 makes one hook all-reduce, rank 0 two; rank 0's second hook all-reduce (a scalar) meets rank 1's
DDP gradient all-reduce (a bucket), and the sequences are off by one from there. The collective sits in a hook,
reached from ``loss.backward()``, under a condition that is the data's.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 4
BATCH = 6


class MultiTaskNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
        self.heads = nn.ModuleDict({"cls": nn.Linear(16, 3), "reg": nn.Linear(16, 1)})

    def forward(self, x, is_reg):
        h = self.trunk(x)
        out = {}
        if (~is_reg).any():
            out["cls"] = self.heads["cls"](h[~is_reg])
        if is_reg.any():
            out["reg"] = self.heads["reg"](h[is_reg])
        return out


class GradNormMonitor:
    def __init__(self, heads):
        self.norms = {}
        for name, head in heads.items():
            head.register_full_backward_hook(self._hook(name))

    def _hook(self, name):
        def hook(module, grad_input, grad_output):
            sq = grad_output[0].detach().pow(2).sum()
            dist.all_reduce(sq)  # BUG # WAITS
            self.norms[name] = sq.sqrt().item()
        return hook


def make_batch(gen):
    x = torch.randn(BATCH, 6, generator=gen)
    is_reg = torch.rand(BATCH, generator=gen) < 0.25
    y_cls = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    y_reg = x[:, 2:3] * 0.5
    return x, is_reg, y_cls, y_reg


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    net = MultiTaskNet()
    monitor = GradNormMonitor(net.heads)
    model = DDP(net, find_unused_parameters=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(12 + rank)  # the rank's task sampler
    for step in range(STEPS):
        x, is_reg, y_cls, y_reg = make_batch(gen)
        out = model(x, is_reg)
        loss = torch.zeros(())
        if "cls" in out:
            loss = loss + F.cross_entropy(out["cls"], y_cls[~is_reg])
        if "reg" in out:
            loss = loss + F.mse_loss(out["reg"], y_reg[is_reg])
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}, grad norms {monitor.norms}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
