"""a11: a DDP loop of 2,100 steps; at step 5 rank 0 writes a file before its backward() and rank 1 reads it after
its own backward(). The same handoff at step 2,050 is found ordered; at step 5 it is called a race.
Promise 1: no false race on a correct program.
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

STEPS = 2100
AT = 5


def correct(folder):
    path = os.path.join(folder, "data.txt")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    got = None
    for step in range(STEPS):
        if step == AT and rank == 0:
            with open(path, "w") as f:  # before this step's backward()
                f.write("hello")
        elif step == AT:
            time.sleep(0.2)
        model(torch.ones(3, 4)).sum().backward()  # DDP's gradient all_reduce: every rank's backward waits for it
        opt.step()
        opt.zero_grad()
        if step == AT and rank != 0:
            with open(path) as f:  # after this step's backward()
                got = f.read()
    return got


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a17-a11-")
    try:
        run = bl.run(correct, 2, args=(folder,), timeout=60, deadline=250, live=False)
        if not run.ok:
            print("the run itself failed:", run)
            return 1
        races = run.races()
        if races:
            print(f"BROKEN: {len(races)} race(s) on a correct program:")
            for race in races:
                print("  ", race)
            return 1
        print("held: no race reported")
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
