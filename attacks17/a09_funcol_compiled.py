"""a09: a correct program orders rank 0's write before rank 1's read with a functional all_reduce inside a
torch.compile'd function (`backend="eager"`, fullgraph): the compiled code runs the same all_reduce and
wait_tensor, and rank 1 uses the result before it reads.
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


def correct(folder):
    path = os.path.join(folder, "data.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("hello")
    else:
        time.sleep(0.2)
    group = dist.group.WORLD

    @torch.compile(backend="eager", fullgraph=True)
    def reduce(t):
        return funcol.all_reduce(t, "sum", group) * 2

    assert reduce(torch.ones(2)).sum().item() == 4 * dist.get_world_size()
    if dist.get_rank() != 0:
        with open(path) as f:
            return f.read()
    return None


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a17-a09-")
    try:
        run = bl.run(correct, 2, args=(folder,), timeout=60, deadline=200, live=False)
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
