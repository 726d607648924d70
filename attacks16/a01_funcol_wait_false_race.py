"""a01: a correct program orders rank 0's write before rank 1's read with a functional all_reduce
(torch.distributed._functional_collectives.all_reduce, then wait_tensor): on gloo, wait_tensor returns only once
the all_reduce completed, which needs every rank's contribution, so rank 1's read comes after rank 0's write.
run.races() reports a race ("nothing orders them on gloo").
Promise 4: no false race on correct code.
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


def correct(folder):
    path = os.path.join(folder, "data.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("hello")
    else:
        time.sleep(0.2)
    done = funcol.wait_tensor(funcol.all_reduce(torch.ones(1), "sum", dist.group.WORLD))
    assert done.item() == dist.get_world_size()
    if dist.get_rank() != 0:
        with open(path) as f:
            return f.read()
    return None


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a16-a01-")
    try:
        run = bl.run(correct, 2, args=(folder,), timeout=10, deadline=60, live=False)
        races = run.races()
        if not run.ok:
            print("the run itself failed:", run)
            return 1
        if races:
            print(f"BROKEN: {len(races)} race(s) on a correct program (funcol all_reduce + wait_tensor orders them):")
            for race in races:
                print("  ", race)
            print(run.ledger())
            return 1
        print("held: no race reported")
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
