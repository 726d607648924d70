"""Promise 4 (no false race on correct code): send/recv messages pair by tag, not by position.

Rank 0 posts an isend with tag=1, writes f.txt, then sends tag=2; rank 1 receives tag=2 first (so after the
write), reads the file, then receives tag=1. The read is ordered after the write by the tag=2 message.
barrierlab's model pairs the k-th send with the k-th recv regardless of tag (ordering.point_to_point_calls)
and reports a race."""

import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist

import barrierlab as bl


def handoff(folder):
    path = os.path.join(folder, "f.txt")
    x = torch.zeros(1)
    if dist.get_rank() == 0:
        first = dist.isend(x, dst=1, tag=1)
        with open(path, "w") as f:
            f.write("x")
        dist.send(x, dst=1, tag=2)  # sent after the write
        first.wait()
        return None
    dist.recv(x, src=0, tag=2)  # returns only after rank 0 wrote the file
    with open(path) as f:
        value = f.read()
    dist.recv(x, src=0, tag=1)
    return value


def main():
    folder = tempfile.mkdtemp()
    try:
        run = bl.run(handoff, world_size=2, args=(folder,), timeout=10, live=False)
        races = run.races()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    statuses = [r.status for r in run.ranks]
    if statuses != ["finished", "finished"]:
        print("the program itself did not finish:", run)
        return 1
    if races:
        print("BROKEN: a correct handoff (ordered by the tag=2 message) is reported as a race:")
        for race in races:
            print("  ", race)
        return 1
    print("held: no race")
    return 0


if __name__ == "__main__":
    sys.exit(main())
