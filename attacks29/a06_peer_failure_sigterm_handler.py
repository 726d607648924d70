"""Promise: `barrierlab run` stands in for `torchrun --standalone`: same exit status, same printed results, same
files. When one worker fails, torchrun stops the others at once with SIGTERM (its failure policy), and training code
that traps SIGTERM (preemption handlers that write an emergency checkpoint, as Slurm-aware trainers do) saves it.
Here rank 1 raises on a bad batch while rank 0 keeps doing local work for 10 s. torchrun: rank 0 is signalled, writes
emergency_0.txt and never prints "finished". `barrierlab run`: nobody signals rank 0; it runs its 10 s to the end,
prints "finished local work" and no emergency checkpoint is written. Exit 0 if the files and lines are the same."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = """\
import signal
import sys
import time
import torch.distributed as dist

def on_term(signum, frame):     # preemption / failure: save what we have
    with open(f"emergency_{dist.get_rank()}.txt", "w") as f:
        f.write("saved on SIGTERM\\n")
    sys.exit(143)

signal.signal(signal.SIGTERM, on_term)
dist.init_process_group("gloo")
rank = dist.get_rank()
if rank == 1:
    time.sleep(0.5)
    raise RuntimeError("bad batch on rank 1")
for i in range(200):            # rank 0: local work, no collective
    time.sleep(0.05)
print(f"RESULT rank {rank} finished local work", flush=True)
"""

tr = _h.under("torchrun", PROG)
bl = _h.under("barrierlab", PROG, bl_args=("--deadline", "40"))
_h.verdict(
    tr["results"] == bl["results"] and sorted(tr["files"]) == sorted(bl["files"]) and tr["rc"] == bl["rc"],
    "a peer's failure and a SIGTERM handler",
    torchrun=f"rc={tr['rc']} files={sorted(tr['files'])} lines={tr['results']}",
    barrierlab=f"rc={bl['rc']} files={sorted(bl['files'])} lines={bl['results']}",
)
