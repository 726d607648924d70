"""a04: a real race: rank 0 opens `metrics.txt` for writing in a helper thread (a logger set up in the background)
and joins it; the main thread calls the barrier and only then writes through the file and closes it. Rank 1 reads
the file after the barrier: nothing orders rank 0's write (after the barrier) before that read.
Promise 2: every real race is reported with the right ranks and lines.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import sys
import tempfile
import threading
import time

import torch.distributed as dist

import barrierlab as bl


def racy(folder):
    path = os.path.join(folder, "metrics.txt")
    if dist.get_rank() == 0:
        box = []
        opener = threading.Thread(target=lambda: box.append(open(path, "w")))  # noqa: SIM115
        opener.start()
        opener.join()
        dist.barrier()
        time.sleep(0.3)
        box[0].write("loss=0.5\n")  # written after the barrier
        box[0].close()
        return None
    dist.barrier()
    with open(path) as f:  # read after the barrier: before rank 0's write, by timing
        return f.read()


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a17-a04-")
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
                f"BROKEN: rank 0 wrote metrics.txt after the barrier while rank 1 read it; run.races() reports {len(races)} race(s)"
            )
            return 1
        print("held:", found[0])
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
