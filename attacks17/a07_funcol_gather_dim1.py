"""a07: a correct program orders rank 0's write before rank 1's read with a functional all_gather along dim 1
(`funcol.all_gather_single(t, 1, group)`, or the deprecated `all_gather_tensor`): torch waits for the all_gather
inside the call (gather_dim != 0 needs the data to concatenate), so the call returns only after every rank entered.
Promise 1: no false race on a correct program.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import barrierlab as bl


def correct(folder, case):
    path = os.path.join(folder, "data.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("hello")
    else:
        time.sleep(0.2)
    group = dist.group.WORLD
    t = torch.ones(2, 3)
    gather = getattr(funcol, case)
    assert gather(t, 1, group).sum().item() == 6 * dist.get_world_size()
    if dist.get_rank() != 0:
        with open(path) as f:
            return f.read()
    return None


def main() -> int:
    broken = False
    for case in ("all_gather_single", "all_gather_tensor"):
        folder = tempfile.mkdtemp(prefix="a17-a07-")
        try:
            run = bl.run(correct, 2, args=(folder, case), timeout=20, deadline=90, live=False)
            if not run.ok:
                print(f"the run itself failed ({case}):", run)
                return 1
            races = run.races()
            if races:
                print(f"BROKEN ({case}): {len(races)} race(s) on a correct program:")
                for race in races:
                    print("  ", race)
                broken = True
            else:
                print(f"held ({case}): no race reported")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
