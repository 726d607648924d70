"""Promise: a program that passes under torchrun passes under `barrierlab run`; the deadline is the only added
limit. A script's rank 0 prepares the data (7 s) while the others wait in dist.barrier() (notebook 01's pattern);
the script calls plain init_process_group("gloo") (torch's default timeout: 30 min). The learner gives `barrierlab
run` room: `--deadline 60`. torchrun: passes. `barrierlab run`: the script's group gets barrierlab's 5 s timeout
(the script passed none), so rank 1 raises in the barrier after 5 s, though the deadline is 53 s away. Exit 0 if
both pass."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h  # noqa: E402

PROG = """\
import time
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
if rank == 0:
    time.sleep(7)                     # download / tokenize once
    open("data.ready", "w").write("ok")
dist.barrier()
print(f"RESULT rank {rank} sees {open('data.ready').read()}", flush=True)
dist.barrier()
if rank == 0:
    import os; os.remove("data.ready")
"""

tr = _h.under("torchrun", PROG)
bl = _h.under("barrierlab", PROG, bl_args=("--deadline", "60"))
raised = [line.strip() for line in bl["out"].splitlines() if line.strip().startswith("rank ") and ":" in line][:3]
_h.verdict(
    tr["rc"] == bl["rc"] and tr["results"] == bl["results"],
    "a 7 s wait in a barrier, --deadline 60",
    torchrun=f"rc={tr['rc']}\n" + "\n".join(tr["results"]),
    barrierlab=f"rc={bl['rc']}\n" + "\n".join(bl["results"] + raised),
)
