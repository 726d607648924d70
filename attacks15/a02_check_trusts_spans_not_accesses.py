"""a02: the nb00, nb01 and nb05 checks judge the ordering from the spans' times, not from the file accesses: a WRONG
answer that keeps the spans but moves the file write after the barrier (readers saved by a sleep) gets ✓
"the record orders rank 0's build before every read", though run.races() on the same code names the race.
Promise 4: a race that happens to pass this time is refused with an explanation.
Exits 0 if the promise holds, 1 if it breaks."""

import os
import shutil
import sys
import tempfile
import time

import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises import nb00, nb01, nb05


def vocab_written_after_the_barrier(folder, build_seconds):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    if rank == 0:
        with bl.span("build", kind="io"):
            time.sleep(build_seconds)  # "building"
    dist.barrier()
    if rank == 0:
        with open(path, "w") as f:  # the write is AFTER the barrier
            f.write("<pad> <unk> the a of")
    else:
        time.sleep(0.5)  # only this sleep lets the readers find the file
    with bl.span("read", kind="io"):
        with open(path) as f:
            return f.read().split()


def ready_file_after_the_barrier(folder, delays):
    rank = dist.get_rank()
    with bl.span("write", kind="io"):
        time.sleep(delays[rank])
    dist.barrier()
    open(os.path.join(folder, f"ready{rank}"), "w").close()  # after the barrier
    time.sleep(0.5)  # only this sleep makes every count 4
    with bl.span("count", kind="io"):
        return len(os.listdir(folder))


def metrics_written_after_the_barrier(folder, steps=4, delay=0.15, base_compute=0.05):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    loss = 0.0
    for step in range(steps):
        with bl.span("compute"):
            time.sleep(base_compute + (delay if rank == step % world_size else 0.0))
            loss += 1.0 / (step + 1)
    with bl.span("write metrics", kind="io"):
        text = f"{loss:.4f}\n"
    dist.barrier()
    with open(os.path.join(folder, f"metrics-{rank}.txt"), "w") as f:  # after the barrier
        f.write(text)
    if rank == 0:
        time.sleep(0.5)  # only this sleep lets rank 0 see every file
        with bl.span("read metrics", kind="io"):
            return sorted(os.listdir(folder))


def main() -> int:
    broken = []
    folder = tempfile.mkdtemp(prefix="a02-")
    try:
        run = bl.run(vocab_written_after_the_barrier, 4, args=(folder, 0.2), live=False)
        races = run.races()
        print("run.races() on the nb01 answer:", len(races), races[0] if races else "")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    v1 = nb01.check_vocab(vocab_written_after_the_barrier, quiet=True, seed=5)
    print("nb01:", v1.message[:200])
    if v1:
        broken.append("nb01.check_vocab accepts a vocabulary written after the barrier (a sleep saved the readers)")
    v0 = nb00.check_everyone_ready(ready_file_after_the_barrier, quiet=True, seed=5)
    print("nb00:", v0.message[:200])
    if v0:
        broken.append(
            "nb00.check_everyone_ready accepts ready files created after the barrier (a sleep saved the counts)"
        )
    v5 = nb05.check(metrics_written_after_the_barrier, seed=1)
    print("nb05:", v5.message[:200])
    if v5:
        broken.append("nb05.check accepts metrics files written after the barrier (a sleep saved rank 0's listing)")
    for b in broken:
        print("BROKEN:", b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
