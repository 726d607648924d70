"""a08: a correct program orders rank 0's write before rank 1's read with a functional collective the recorder
does not wrap: `funcol.broadcast(t, 0, group)` (rank 1's first use waits for rank 0's data) or
`funcol.all_reduce_coalesced([t, t], "sum", group)`; the call is missing from the record altogether.
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
    t = torch.ones(2)
    if case == "broadcast":
        assert (funcol.broadcast(t, 0, group) + 0).sum().item() == 2
    else:
        outs = funcol.all_reduce_coalesced([t, t], "sum", group)
        assert sum(o.sum().item() for o in outs) == 4 * dist.get_world_size()
    if dist.get_rank() != 0:
        with open(path) as f:
            return f.read()
    return None


def main() -> int:
    broken = False
    for case in ("broadcast", "all_reduce_coalesced"):
        folder = tempfile.mkdtemp(prefix="a17-a08-")
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
