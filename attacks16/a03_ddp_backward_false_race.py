"""a03: a correct program orders rank 0's write before rank 1's read with a DDP training step: backward() returns
only once DDP's gradient all_reduce completed, which on gloo needs every rank's gradients, so rank 1's read comes
after rank 0's write (notebook 06 teaches this as "the synchronisation you already have"). run.races() reports a
race and the finished run's diagnosis says it "came out right by timing".
Promise 4: no false race on correct code.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import sys
import tempfile
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import barrierlab as bl


def correct(folder):
    path = os.path.join(folder, "data.txt")
    model = DDP(torch.nn.Linear(2, 1))
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("hello")
    else:
        time.sleep(0.2)
    model(torch.ones(3, 2)).sum().backward()  # DDP's gradient all_reduce: every rank waits for every rank
    if dist.get_rank() != 0:
        with open(path) as f:
            return f.read()
    return None


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a16-a03-")
    try:
        run = bl.run(correct, 2, args=(folder,), timeout=10, deadline=60, live=False)
        if not run.ok:
            print("the run itself failed:", run)
            return 1
        races = run.races()
        if races:
            print(f"BROKEN: {len(races)} race(s) on a correct program (DDP's backward all_reduce orders them):")
            print(run.diagnosis)
            print(run.ledger())
            return 1
        print("held: no race reported")
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
