"""attack22 a02: a DONE marker left by an earlier run, cleared before a barrier, then made again.

Promise (docs/reference.md, "File races"): "a marker a rank polled for and found (an empty DONE file ...) orders
what its maker did before it". Correct job: rank 0 removes an earlier run's DONE before a barrier; after it
rank 0 writes data.txt then creates DONE; rank 1 polls os.path.exists(DONE), then reads data.txt. Run twice in
one folder: run 1 reports nothing; run 2 (rank 0 removed run 1's marker, in an order the barrier fixes) reports
three races, among them rank 1's read of data.txt. Exit 0 if run 2 is as clean as run 1.
"""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist
from _h import bl, verdict


def job(d):
    r = dist.get_rank()
    done, data = os.path.join(d, "DONE"), os.path.join(d, "data.txt")
    if r == 0 and os.path.exists(done):
        os.remove(done)  # the earlier run's marker
    dist.barrier()
    if r == 0:
        time.sleep(0.2)
        with open(data, "w") as f:
            f.write("payload")
        open(done, "w").close()
    else:
        while not os.path.exists(done):
            time.sleep(0.02)
        with open(data) as f:
            f.read()
    dist.barrier()


def main():
    d = tempfile.mkdtemp(prefix="a22-a02-")
    try:
        found = []
        for i in (1, 2):
            run = bl.run(job, 2, args=(d,), timeout=10)
            if not run.ok:
                print(run)
                sys.exit(2)
            races = [str(r) for r in run.races()]
            print(f"run {i}: {len(races)} race(s)")
            for r in races:
                print("   ", r)
            found.append(len(races))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    verdict(found[1] > found[0], f"same correct job: run 1 {found[0]} races, run 2 {found[1]} races")


if __name__ == "__main__":
    main()
