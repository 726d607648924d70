"""Promise: a program that passes under torchrun passes under `barrierlab run` with the same results. DDP with
find_unused_parameters=True, uneven inputs under Join([model]) (rank 1 has 3 more batches), no_sync accumulation,
SGD steps: every loss and the final weights are compared. Exit 0 if they are the same."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = r"""
import sys, json, torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.algorithms.join import Join
class Net(nn.Module):
    def __init__(self):
        super().__init__(); self.a = nn.Linear(4, 4); self.b = nn.Linear(4, 1); self.unused = nn.Linear(4, 1)
    def forward(self, x, use_b=True):
        h = torch.relu(self.a(x))
        return self.b(h) if use_b else self.unused(h)
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(Net(), find_unused_parameters=True)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
n_batches = 5 + 3 * rank                      # uneven inputs
losses = []
with Join([model]):
    for i in range(n_batches):
        x = torch.randn(8, 4, generator=g)
        loss = model(x, use_b=(i % 2 == 0)).pow(2).mean()
        loss.backward(); opt.step(); opt.zero_grad()
        losses.append(round(loss.item(), 6))
for i in range(3):
    with model.no_sync():
        model(torch.ones(2, 4)).sum().backward()
model(torch.ones(2, 4)).sum().backward(); opt.step()
w = [round(v, 6) for v in model.module.a.weight.flatten().tolist()[:6]]
print(f"RESULT rank {rank} losses {losses} w {w}", flush=True)
dist.destroy_process_group()
"""

tr = _h.under("torchrun", PROG)
bl = _h.under("barrierlab", PROG, bl_args=("--deadline", "100"))
_h.verdict(
    len(tr["results"]) == 2 and tr["results"] == bl["results"] and tr["rc"] == bl["rc"] == 0,
    "same RESULT lines and exit status",
    torchrun=f"rc={tr['rc']}\n" + "\n".join(tr["results"]) + ("" if tr["results"] else tr["err"][-1500:]),
    barrierlab=f"rc={bl['rc']}\n" + "\n".join(bl["results"]) + ("" if bl["results"] else bl["out"][-1500:]),
)
