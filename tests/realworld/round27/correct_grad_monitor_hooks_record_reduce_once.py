"""A per-head gradient-norm monitor for a multi-task model whose module backward hooks only record the local norm;
the monitor all-reduces one vector of all heads' norms after ``loss.backward()``, zeros for a head that did not run.

Models: bigscience-workshop/Megatron-DeepSpeed ``megatron/debug_utils.py`` ``DebugGradientNorm``
(``register_full_backward_hook`` on each module, the norm of ``grad_outputs``); the Lightning ``grad_norm`` /
``on_after_backward`` callbacks (norms taken after the backward); DeepSpeed / Megatron's global grad norm (one
all-reduce of the local squared norms); multi-task heads skipped when a batch has no labels for them, under
``DistributedDataParallel(find_unused_parameters=True)``.

What it does: 2 ranks train a shared trunk with a classification head and a regression head (DDP, unused
parameters allowed) for 4 steps. Each rank draws the task of each of its 6 samples from its own generator (about
a quarter regression); a head runs only if the batch has its task, so the hooks fire a different number of times
on the ranks (rank 1's batch in steps 2 and 3 has no regression sample). The hooks add to a local vector;
``monitor.step_end()`` all-reduces it once per step; rank 0 logs the norms.

Why it is right although it looks rank-dependent: the hooks still fire per rank and per batch, but they do not
communicate; the one collective of the monitor is made on every rank once per step, with a vector whose length is
the number of heads, not the number of heads that ran.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
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
        self.names = list(heads.keys())
        self.local = torch.zeros(len(self.names))
        self.norms = {}
        for i, (name, head) in enumerate(heads.items()):
            head.register_full_backward_hook(self._hook(i))

    def _hook(self, i):
        def hook(module, grad_input, grad_output):
            self.local[i] += grad_output[0].detach().pow(2).sum()
        return hook

    def step_end(self):
        sq = self.local.clone()
        dist.all_reduce(sq)
        self.norms = {name: v.sqrt().item() for name, v in zip(self.names, sq)}
        self.local.zero_()


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
        loss.backward()
        monitor.step_end()
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}, grad norms {monitor.norms}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
