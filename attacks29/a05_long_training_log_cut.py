"""Promise: a program that passes under torchrun passes under `barrierlab run` with the same printed results. A
training script logs its loss every step on rank 0 (`if rank == 0: print(...)`), 3,000 steps of a tiny DDP model:
about 130 kB of ordinary log. torchrun passes every line through. `barrierlab run` prints each rank's output after
the run, keeping only its first and last 32 KiB (collect.OUTPUT_KEEP) with "[… N bytes of output omitted …]" in
between: most of the loss curve is gone, and the reference says nothing of a limit on printed output. Exit 0 if
both print the same lines (torch's own gloo teardown
sometimes makes torchrun exit 1 after the last line: only the printed lines are compared)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = """\
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
g = torch.Generator().manual_seed(rank)
x = torch.randn(64, 8, generator=g)
y = x.sum(1, keepdim=True)
for step in range(3000):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    if rank == 0:
        print(f"RESULT step {step:5d} loss {loss.item():.6f}")
dist.destroy_process_group()
"""

tr = _h.under("torchrun", PROG)
bl = _h.under("barrierlab", PROG, bl_args=("--deadline", "100"))
omitted = [line for line in bl["out"].splitlines() if "omitted" in line]
_h.verdict(
    len(tr["results"]) == 3000 and tr["results"] == bl["results"],
    "3,000 lines of training log, printed the same",
    torchrun=f"rc={tr['rc']} RESULT lines: {len(tr['results'])}",
    barrierlab=f"rc={bl['rc']} RESULT lines: {len(bl['results'])}\n" + "\n".join(omitted),
)
