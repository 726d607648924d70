"""Promise 4: a race that happens to pass this time is found.

A classic start-up bug: rank 0 gives the job a fresh output folder (shutil.rmtree(out); os.makedirs(out)) while
every other rank does os.makedirs(out, exist_ok=True) and writes its shard there, with nothing ordering them.
When the other ranks are early, rank 0's rmtree deletes their shards: the model reports it. When they are late
(this run), the shards survive and the model reports nothing -- though only timing decided it. Rank 0's removal
of the folder is never compared with the later makedirs(exist_ok=True) and writes inside it: a folder a rank
"made sure of" needs no other rank's order, even when another rank removes and makes it at the same time.
Exits 0 when both timings report a race, 1 when the late one reports none.
"""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl


def start(d, delay):
    out = os.path.join(d, "out")
    rank = dist.get_rank()
    if rank == 0:
        time.sleep(0.2)
        shutil.rmtree(out, ignore_errors=True)  # a fresh output folder
        os.makedirs(out)
    else:
        time.sleep(delay)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, f"shard{rank}.txt"), "w") as f:
            f.write("x")
    dist.barrier()
    return sorted(os.listdir(out))


def main() -> int:
    reported = {}
    for label, delay in (("early writers", 0.0), ("late writers", 0.6)):
        d = tempfile.mkdtemp(prefix="a18_a09_")
        try:
            os.makedirs(os.path.join(d, "out"))  # left by a previous job
            run = bl.run(start, world_size=3, args=(d, delay), timeout=10)
            races = run.races()
            reported[label] = len(races)
            print(f"{label}: finished={run.ok} rank 0 lists {run.values[0]} races={len(races)}")
            for race in races[:1]:
                print("   ", race)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    if reported["early writers"] and not reported["late writers"]:
        print("BROKEN: whether the shards survive depends on timing, and the late run reports no race")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
