"""a14: a real race: rank 0 opens `out.tmp`, renames it to `out.txt` while it is still open (publishing it early),
calls the barrier, and only then writes through the still-open file and closes it. Rank 1 reads `out.txt` after
the barrier: nothing orders rank 0's bytes (written after the barrier) before that read.
Promise 2: every real race is reported with the right ranks and lines.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl


def racy(folder):
    tmp, final = os.path.join(folder, "out.tmp"), os.path.join(folder, "out.txt")
    if dist.get_rank() == 0:
        f = open(tmp, "w")  # noqa: SIM115
        os.replace(tmp, final)
        dist.barrier()
        time.sleep(0.3)
        f.write("result=42\n")  # after the barrier
        f.close()
        return None
    dist.barrier()
    with open(final) as f:
        return f.read()


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a17-a14-")
    try:
        run = bl.run(racy, 2, args=(folder,), timeout=10, deadline=60, live=False)
        if not run.ok:
            print("the run itself failed:", run)
            return 1
        races = run.races()
        print(f"rank 1 read {run.values[1]!r}")
        found = [r for r in races if {r.first.rank, r.second.rank} == {0, 1}]
        if not found:
            print(
                f"BROKEN: rank 0 wrote out.txt after the barrier while rank 1 read it; run.races() reports {len(races)} race(s)"
            )
            return 1
        print("held:", found[0])
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
