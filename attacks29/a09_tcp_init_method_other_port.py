"""Promise: `barrierlab run` gives the results torchrun gives (the reverse direction: a program that FAILS under
torchrun must not pass). A script written for mp.spawn-style launching keeps `init_process_group(init_method=
"tcp://127.0.0.1:29533", rank=..., world_size=...)` and is started with torchrun. Under torchrun, torch sees
TORCHELASTIC_USE_AGENT_STORE=True and makes every rank a CLIENT of tcp://127.0.0.1:29533 (rendezvous.py,
_create_c10d_store), where nobody listens: the job fails (DistNetworkError), exit 1. `barrierlab run` sends every
init_process_group to the store it hosts, whatever address the script names, so the same script passes, exit 0,
and the learner never sees the bug. (The reference documents the redirect for tutorial functions under bl.run,
where mp.spawn would also pass; for scripts it promises torchrun's behaviour.) Exit 0 if both end the same way."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = """\
import datetime
import os
import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
try:
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29533", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=6))
    t = torch.ones(1)
    dist.all_reduce(t)
    print(f"RESULT rank {rank} joined", flush=True)
except Exception as e:
    print(f"RESULT rank {rank} failed: {type(e).__name__}", flush=True)
    raise SystemExit(1)
"""

tr = _h.under("torchrun", PROG)
bl = _h.under("barrierlab", PROG, bl_args=("--deadline", "40"))
_h.verdict(
    (tr["rc"] == 0) == (bl["rc"] == 0),
    "tcp:// init_method naming a port nobody serves",
    torchrun=f"rc={tr['rc']}\n" + "\n".join(tr["results"]),
    barrierlab=f"rc={bl['rc']}\n" + "\n".join(bl["results"]),
)
