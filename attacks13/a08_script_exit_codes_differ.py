"""Promise 3, and reference.md: "A rank that calls sys.exit(code) is reported with the status Python would give
the process".

1. `sys.exit(os.system(cmd))` where cmd exited 1: os.system returns the wait status 256, Python exits with
   256 & 0xFF = 0, and torchrun (checked by hand) reports success, exit 0. `barrierlab run` reports
   "exited with code 0 before returning from the function" and exits 1.
2. `sys.exit(0.0)`: Python prints "0.0" and exits with 1 (a code that is not an int); torchrun (checked by hand)
   exits 1. `barrierlab run` reports the rank "finished" and exits 0.
Cause: _rank.run_script's `if exit_.code not in (None, 0): raise` compares the code object (0.0 == 0) instead of
the status Python would exit with (_protocol.exit_status), and a re-raised SystemExit whose status is 0 is
counted as an early exit.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import TempDir, barrierlab  # noqa: E402

HEAD = (
    'import os, sys\nimport torch.distributed as dist\ndist.init_process_group("gloo")\ndist.barrier()\n'
    "dist.destroy_process_group()\n"
)
CASES = {"sys.exit(os.system('exit 1'))": 0, "sys.exit(0.0)": 1}

broken = []
with TempDir() as d:
    for body, python_status in CASES.items():
        script = os.path.join(d, "train.py")
        with open(script, "w") as f:
            f.write(HEAD + body + "\n")
        p = barrierlab("run", script, "-n", "2")
        line = p.stdout.splitlines()[1] if len(p.stdout.splitlines()) > 1 else p.stdout
        ok = (p.returncode == 0) == (python_status == 0)
        print(f"{body}: python/torchrun exit {python_status}, barrierlab run exit {p.returncode} ({line.strip()})")
        if not ok:
            broken.append(body)
if broken:
    print("BROKEN: barrierlab run's verdict differs from python/torchrun for", broken)
    sys.exit(1)
print("held")
