"""Promise 4: no false race on correct code, and the explanation is right.

Rank 0 saves ckpt_N.pt each step and rewrites metrics.json (created at step 0, before the first barrier).
After each barrier rank 1 lists the folder (glob "ckpt_*.pt") for the latest checkpoint while rank 0 rewrites
metrics.json again. Rewriting a file that exists changes no entry of the folder, so the listing cannot depend
on it -- yet each rewrite is reported as a race with the listing, worded "rank 0 created `metrics.json` ...
after rank 1 listed" although the file was created at step 0, ordered before every listing.
Exits 0 when there is no race, 1 otherwise.
"""

import glob
import json
import os
import shutil
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import barrierlab as bl


def train(d):
    rank = dist.get_rank()
    metrics = os.path.join(d, "metrics.json")
    for step in range(3):
        if rank == 0:
            torch.save({"s": step}, os.path.join(d, f"ckpt_{step}.pt"))
            with open(metrics, "w") as f:  # created at step 0
                json.dump({"step": step}, f)
        dist.barrier()
        if rank == 1:
            sorted(glob.glob(os.path.join(d, "ckpt_*.pt")))[-1]  # the latest checkpoint
        if rank == 0:
            time.sleep(0.05)
            with open(metrics, "w") as f:  # a rewrite: the folder's entries stay the same
                json.dump({"step": step, "done": True}, f)
        dist.barrier()
    return 1


def main() -> int:
    d = tempfile.mkdtemp(prefix="a18_a12_")
    try:
        run = bl.run(train, world_size=2, args=(d,), timeout=10)
        races = run.races()
        print(f"finished={run.ok} races={len(races)}")
        for race in races[:2]:
            print("   ", race)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if run.ok and races:
        print("BROKEN: rewriting an existing file is reported as racing a listing of its folder (as 'created')")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
