"""a05: rank 0 writes `meta.json`, flushes it and fsyncs it (every byte is in the file), calls the barrier, and
closes the file after it, writing nothing more. Rank 1 reads the file after the barrier. Correct: nothing is
written after the barrier (what rank 1 reads is whole, every time).
Promise 1: no false race on a correct program.
Exits 0 if the promise holds, 1 if it breaks."""

import json
import os
import shutil
import sys
import tempfile

import torch.distributed as dist

import barrierlab as bl


def correct(folder):
    path = os.path.join(folder, "meta.json")
    if dist.get_rank() == 0:
        f = open(path, "w")  # noqa: SIM115
        json.dump({"step": 100}, f)
        f.flush()
        os.fsync(f.fileno())
        dist.barrier()
        f.close()  # nothing written after the barrier
        return None
    dist.barrier()
    with open(path) as f:
        return json.load(f)


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a17-a05-")
    try:
        run = bl.run(correct, 2, args=(folder,), timeout=10, deadline=60, live=False)
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
