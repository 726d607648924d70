"""Promise: a program that passes under torchrun passes under `barrierlab run` with the same results. A DDP script
being debugged turns torch.compile off the documented way, `os.environ["TORCH_COMPILE_DISABLE"] = "1"` before
`import torch`, and keeps its `torch.compile(model)` line. Under torchrun dynamo's config reads the variable at
import and the model runs eagerly (the forward sees torch.compiler.is_compiling() False). Under `barrierlab run` the
warm process imported torch._dynamo (preloaded for DDP scripts) before the script ran: the model is compiled anyway
(is_compiling() True inside forward; the script's own log line differs and compile time is spent). Exit 0 if both
print the same."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = """\
import os
os.environ["TORCH_COMPILE_DISABLE"] = "1"     # debugging: run eagerly
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import torch._dynamo

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)
    def forward(self, x):
        y = self.lin(x)
        return y * 2 if torch.compiler.is_compiling() else y   # e.g. a path that logs only when eager

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.compile(DDP(Net()))
loss = model(torch.ones(3, 4)).sum()
loss.backward()
print(f"RESULT rank {rank} dynamo disabled={torch._dynamo.config.disable} loss={loss.item():.5f}", flush=True)
dist.destroy_process_group()
"""

tr = _h.under("torchrun", PROG)
bl = _h.under("barrierlab", PROG, bl_args=("--deadline", "100"))
_h.verdict(
    tr["results"] == bl["results"] and tr["rc"] == bl["rc"] == 0,
    "TORCH_COMPILE_DISABLE set by the script before import torch",
    torchrun=f"rc={tr['rc']}\n" + "\n".join(tr["results"]),
    barrierlab=f"rc={bl['rc']}\n" + "\n".join(bl["results"]) + ("\n" + bl["out"][-1500:] if bl["rc"] else ""),
)
