"""a01: rank 0 writes a data file and closes it; a barrier; then every rank opens the file for reading and keeps
it open across the training loop's all_reduces (a dataset read step by step), closing it at the end. Correct:
the write was closed before the barrier, every read comes after it.
Promise 1: no false race on a correct program.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist

import barrierlab as bl


def correct(folder):
    path = os.path.join(folder, "data.bin")
    if dist.get_rank() == 0:
        with open(path, "wb") as f:
            f.write(bytes(range(64)))
    dist.barrier()
    total = 0
    with open(path, "rb") as data:  # kept open through the loop
        for step in range(4):
            data.seek(step * 8)
            chunk = data.read(8)
            t = torch.tensor([float(sum(chunk))])
            dist.all_reduce(t)
            total += t.item()
    return total


def main() -> int:
    folder = tempfile.mkdtemp(prefix="a17-a01-")
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
