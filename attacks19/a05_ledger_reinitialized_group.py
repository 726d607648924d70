"""a05: the ledger of a script that destroys its default group and makes a new one merges the two groups'
sequences: the first group's calls are dropped or shown after the second group's.

Promise 4: what the ledger / diagnosis say is true. Its rows claim "# is the position in the group's
sequence"; for a warm-up group (all_reduce, barrier; destroyed) followed by the training group whose first
call only rank 0 makes, the ledger shows 2 rows: row 1 the second group's calls, row 2 the FIRST group's
barrier (line 6) as if it came after them, and the first group's all_reduce (line 5) nowhere. Each rank made 3 calls.
"""

import shutil
import sys
import tempfile

from barrierlab.script import run_script

SCRIPT = """import torch, torch.distributed as dist
# a warm-up group, destroyed
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
dist.barrier()
dist.destroy_process_group()
# the training group
dist.init_process_group("gloo")
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(1))   # only rank 0 reaches it
dist.barrier()
dist.destroy_process_group()
"""

folder = tempfile.mkdtemp(prefix="a05-")
try:
    path = f"{folder}/train.py"
    with open(path, "w") as f:
        f.write(SCRIPT)
    run = run_script(path, 2, timeout=2, deadline=30)
    ledger = run.ledger()
    print(run.diagnosis.headline)
    print(ledger)
    made = {r.rank: [(e.name, e.line) for e in r.events if e.kind == "collective"] for r in run}
    print("recorded calls:", made)
    rows = [line for line in ledger.splitlines() if line[:1].isdigit()]
    problems = []
    if "line 5" not in ledger:
        problems.append("the first group's all_reduce (line 5), made by both ranks, is not in the ledger")
    if len(rows) < max(len(c) for c in made.values()):
        problems.append(f"{len(rows)} ledger rows for {max(len(c) for c in made.values())} calls per rank")
    if rows and "line 6" in rows[-1]:
        problems.append("the warm-up group's barrier (line 6) is the LAST row, after the calls that failed")
    if problems:
        print("BROKEN:", "; ".join(problems))
        sys.exit(1)
    print("held")
finally:
    shutil.rmtree(folder, ignore_errors=True)
