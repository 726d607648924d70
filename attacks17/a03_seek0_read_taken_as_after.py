"""a03: a real race that came out right by timing: rank 0 writes `vocab.txt` and then calls the barrier; rank 1
waits a little, reads the file (parsing it, then `f.seek(0)` to keep the handle rewound, as csv/json code that
re-reads does) and only then calls the barrier, inside its `with` block. Rank 1's read comes before its barrier:
nothing orders it after rank 0's write. Variant 2: the read is an `os.pread` (it never moves the offset).
Promise 2: every real race, even one this run got right by timing, is reported with the right ranks and lines.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl


def racy(folder, how):
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("a\nb\nc\n")
        dist.barrier()
        return None
    time.sleep(0.3)  # rank 0 is done by then: the race comes out right by timing
    with open(path, "rb") as f:
        if how == "seek":
            words = f.read().split()
            f.seek(0)
        else:
            words = os.pread(f.fileno(), 100, 0).split()
        dist.barrier()
    return len(words)


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a17-a03-")
    broken = False
    try:
        for how in ("seek", "pread"):
            run = bl.run(racy, 2, args=(folder, how), timeout=10, deadline=60, live=False)
            if not run.ok:
                print("the run itself failed:", run)
                return 1
            races = run.races()
            found = [r for r in races if {r.first.rank, r.second.rank} == {0, 1}]
            if not found:
                print(
                    f"BROKEN ({how}): rank 1 read vocab.txt before its barrier, unordered with rank 0's write, "
                    f"and run.races() reports {len(races)} race(s)"
                )
                broken = True
            else:
                print(f"held ({how}):", found[0])
            os.remove(os.path.join(folder, "vocab.txt"))
        return 1 if broken else 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
