"""a06: a correct program orders rank 0's write before rank 1's read with a functional all_reduce whose result
is indexed or reshaped before its first use (`funcol.all_reduce(t, "sum", group)[0].sum().item()`): on gloo the
first use waits for the all_reduce, which needs every rank's contribution. A view of an AsyncCollectiveTensor is a
new AsyncCollectiveTensor around a view of the result, and its wait is that view's wait_tensor.
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
    t = torch.ones(2, 2)
    if case == "index":
        assert funcol.all_reduce(t, "sum", group)[0].sum().item() == 2 * dist.get_world_size()
    elif case == "view":
        assert funcol.all_reduce(t, "sum", group).view(-1).sum().item() == 4 * dist.get_world_size()
    else:
        first, _ = funcol.all_reduce(t, "sum", group).chunk(2)
        assert first.sum().item() == 2 * dist.get_world_size()
    if dist.get_rank() != 0:
        with open(path) as f:
            return f.read()
    return None


def main() -> int:
    broken = False
    for case in ("index", "view", "chunk"):
        folder = tempfile.mkdtemp(prefix="a17-a06-")
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
