"""a02: a real race that went wrong in this run: rank 0 creates `config.txt` and writes it slowly; rank 1 opens the
file while it is still empty, reads "" (its file offset stays 0) and only then calls the barrier, inside its
`with` block. The read happened before the barrier and before rank 0's write: nothing orders them.
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
    path = os.path.join(folder, "config.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:  # line 22: created empty at once
            time.sleep(0.5)
            f.write("lr=0.1\n")
        dist.barrier()
        return None
    while not os.path.exists(path):
        time.sleep(0.01)
    with open(path) as f:  # line 28
        text = f.read()  # read now: rank 0 has not written yet
        dist.barrier()
    return text


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a17-a02-")
    try:
        run = bl.run(racy, 2, args=(folder,), timeout=10, deadline=60, live=False)
        if not run.ok:
            print("the run itself failed:", run)
            return 1
        got = run.values[1]
        races = run.races()
        print(f"rank 1 read {got!r} (the race went wrong: {got == ''})")
        found = [r for r in races if {r.first.rank, r.second.rank} == {0, 1} and "config.txt" in r.first.path]
        if got == "" and not found:
            print(
                f"BROKEN: rank 1 read an empty file before rank 0 wrote it, and run.races() reports {len(races)} race(s)"
            )
            for race in races:
                print("  ", race)
            print(run.diagnosis if hasattr(run, "diagnosis") else "")
            return 1
        print("held:", [str(r) for r in found])
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
