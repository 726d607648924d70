"""attack22 a01: a file written in one run and used in a second run.

Promise (docs/reference.md, "File races"): a file published by a rename and found orders its maker's work before
the finder ("a file published by a rename and found, even if it is removed later"), and the model reports only
unordered pairs. The same correct job -- rank 0 clears an earlier job's checkpoint before a barrier, then
publishes a new one with torch.save(tmp) + os.replace; rank 1 polls os.path.exists until it appears, then loads
it -- is run twice in one folder. Run 1: no race. Run 2 (the folder holds run 1's checkpoint, which rank 0
removes before the barrier): the model reports rank 1's load as racing rank 0's replace. Nothing differs between
the runs but the stale file, removed in an order a barrier fixes. Exit 0 if run 2 is as clean as run 1.
"""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist
from _h import bl, verdict


def job(d):
    import torch

    r = dist.get_rank()
    ck = os.path.join(d, "model.pt")
    if r == 0 and os.path.exists(ck):
        os.remove(ck)  # an earlier job's checkpoint: gone before anyone looks
    dist.barrier()
    if r == 0:
        time.sleep(0.2)
        torch.save({"new": 1}, ck + ".tmp")
        os.replace(ck + ".tmp", ck)  # published whole
    else:
        while not os.path.exists(ck):
            time.sleep(0.02)
        torch.load(ck)
    dist.barrier()


def main():
    d = tempfile.mkdtemp(prefix="a22-a01-")
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
