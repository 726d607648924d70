"""Promise 4 (no false race on correct code): send/recv on two process groups between the same two ranks.

Messages on different process groups never match each other (each group has its own gloo context). Rank 0
posts an isend on group `side` (a group of ranks 0 and 1), writes f.txt, then sends on the default group;
rank 1 receives on the default group first (so after the write), reads the file, then receives on `side`.
The read is ordered after the write by the default group's message. barrierlab pairs the k-th send from A to B
with the k-th recv on B from A whatever their group (ordering.point_to_point_calls keys by (sender, receiver)
only) and reports a race."""

import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist

import barrierlab as bl


def handoff(folder):
    side = dist.new_group([0, 1])
    path = os.path.join(folder, "f.txt")
    x = torch.zeros(1)
    if dist.get_rank() == 0:
        first = dist.isend(x, dst=1, group=side)
        with open(path, "w") as f:
            f.write("x")
        dist.send(x, dst=1)  # default group, after the write
        first.wait()
        return None
    dist.recv(x, src=0)  # default group: returns only after rank 0 wrote the file
    with open(path) as f:
        value = f.read()
    dist.recv(x, src=0, group=side)
    return value


def main():
    folder = tempfile.mkdtemp()
    try:
        run = bl.run(handoff, world_size=2, args=(folder,), timeout=10, live=False)
        races = run.races()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if [r.status for r in run.ranks] != ["finished", "finished"]:
        print("the program itself did not finish:", run)
        return 1
    if races:
        print("BROKEN: a correct handoff (ordered by the default group's message) is reported as a race:")
        for race in races:
            print("  ", race)
        return 1
    print("held: no race")
    return 0


if __name__ == "__main__":
    sys.exit(main())
