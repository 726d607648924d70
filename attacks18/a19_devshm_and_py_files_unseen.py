"""Promise 4: a race that happens to pass this time is found.

Two file handoffs the recorder never sees, both raced (rank 1 reads after a sleep, nothing orders it):
- a file under /dev/shm (the usual place on one machine to stage data in RAM between processes): every path
  under /dev/ is skipped as a "system" path;
- a generated Python file (rank 0 writes config_gen.py, the others read it): every path ending in .py is
  skipped as code.
The same program writing data.bin in an ordinary temp folder is reported as a race.
Exits 0 when all three are reported, 1 otherwise.
"""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl


def handoff(path):
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("x = 1\n")
        return 0
    time.sleep(0.5)  # "long enough": nothing orders the read after the write
    with open(path) as f:
        return f.read()


def main() -> int:
    tmp = tempfile.mkdtemp(prefix="a18_a19_")
    shm = tempfile.mkdtemp(prefix="a18_a19_", dir="/dev/shm") if os.path.isdir("/dev/shm") else None
    found = {}
    try:
        cases = {
            "ordinary temp file": os.path.join(tmp, "data.bin"),
            "generated .py file": os.path.join(tmp, "config_gen.py"),
        }
        if shm:
            cases["file under /dev/shm"] = os.path.join(shm, "data.bin")
        for label, path in cases.items():
            run = bl.run(handoff, world_size=2, args=(path,), timeout=10)
            found[label] = len(run.races())
            print(f"{label}: finished={run.ok} races={found[label]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if shm:
            shutil.rmtree(shm, ignore_errors=True)
    missed = [label for label, n in found.items() if n == 0]
    if found.get("ordinary temp file") and missed:
        print("BROKEN: the same race is not reported for", ", ".join(missed))
        return 1
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
