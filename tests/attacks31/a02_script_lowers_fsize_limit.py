"""a02: a script that lowers its soft file-size limit (RLIMIT_FSIZE) before it ends.

Promise: "a program that passes under torchrun passes under barrierlab run and does the same there" (the
reference's list of differences, and its note that a lowered soft open-file limit is raised back "so the rank can
still report (a05)"). A script may cap the size of files it writes from then on (resource.setrlimit(RLIMIT_FSIZE)
with the hard limit left as it is). Under torchrun nothing of the launcher writes files from the worker; under
barrierlab the rank still has to write its events, flight record and outcome after the script's code ran.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h

SCRIPT = """
import resource
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
dist.barrier()
print("rank", dist.get_rank(), "sum", t.item())
dist.destroy_process_group()
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (CAP, hard))  # no file written from here on may grow past CAP
"""
ok = True
for limit in (0, 512):
    files = {"train.py": SCRIPT.replace("CAP", str(limit))}
    tr = _h.run_driver(
        "",
        timeout=120,
        files=files,
        argv=["/work/main/.venv/bin/torchrun", "--standalone", "--nproc-per-node", "2", "train.py"],
    )
    bl = _h.run_driver(
        "", timeout=120, files=files, argv=[_h.PY, "-m", "barrierlab", "run", "train.py", "-n", "2", "--deadline", "20"]
    )
    print(
        f"RLIMIT_FSIZE soft={limit}: torchrun rc={tr.rc} ({tr.elapsed:.1f}s); barrierlab run rc={bl.rc} ({bl.elapsed:.1f}s)"
    )
    print("   barrierlab stdout:", bl.stdout.strip().splitlines()[:4])
    if tr.rc == 0 and bl.rc != 0:
        ok = False
    if tr.survivors or bl.survivors:
        print("survivors", tr.survivors, bl.survivors)
        ok = False
_h.verdict(not ok, "a script that lowers RLIMIT_FSIZE at its end (see above)")
