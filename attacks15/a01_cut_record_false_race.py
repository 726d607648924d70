"""a01: a correct program (rank 0 writes, every rank barriers, every rank reads) whose ranks record many spans
(so each record's middle is dropped) gets races from run.races(), and the nb01 check refuses the correct fix,
while the diagnosis itself says file accesses are not checked for races.
Promise 4: no false race on correct code; a learner's correct answer is accepted.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises import nb01


def correct(folder):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    if rank == 0:
        with open(path, "w") as f:
            f.write("<pad> <unk> the a of")
    for _ in range(2000):
        with bl.span("setup"):
            pass
    dist.barrier()  # orders rank 0's write before every read
    for _ in range(3000):
        with bl.span("batch"):
            pass
    with open(path) as f:
        return f.read().split()


def correct_exercise(folder, build_seconds):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    if rank == 0:
        with bl.span("build", kind="io"):
            time.sleep(build_seconds)
            with open(path, "w") as f:
                f.write("<pad> <unk> the a of")
    for _ in range(2000):
        with bl.span("setup"):
            pass
    dist.barrier()
    for _ in range(3000):
        with bl.span("batch"):
            pass
    with bl.span("read", kind="io"):
        with open(path) as f:
            return f.read().split()


def main() -> int:
    broken = []
    folder = tempfile.mkdtemp(prefix="a01-")
    try:
        run = bl.run(correct, 4, args=(folder,), live=False)
        print("ok:", run.ok, "dropped:", {r: d.events for r, d in run.events_dropped.items()})
        print("diagnosis:", run.diagnosis.headline)
        races = run.races()
        print("run.races():", len(races))
        for race in races[:2]:
            print("  ", race)
        if run.ok and races:
            broken.append(f"run.races() reports {len(races)} races on a barrier-ordered program")
        collectives = [sum(e.kind == "collective" for e in r.events) for r in run]
        if "same 0 collective calls" in run.diagnosis.headline:
            broken.append(f"the headline says 0 collective calls; each rank made 1 barrier (kept: {collectives})")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    verdict = nb01.check_vocab(correct_exercise, quiet=True, seed=1)
    print("nb01 check:", verdict.message[:300])
    if not verdict:
        broken.append("nb01.check_vocab refuses a correct fix (barrier after the build)")
    for b in broken:
        print("BROKEN:", b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
