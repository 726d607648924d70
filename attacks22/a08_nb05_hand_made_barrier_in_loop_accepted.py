"""attack22 a08: notebook 05's check accepts a barrier in the loop when it is hand-made.

Promise (src/barrierlab/exercises/nb05.py, notebook 05's exercise): the check refuses an answer in which "a rank
waited for another inside the loop (a barrier or a dummy collective per step)" and passes only "no rank waited
for another in the loop". Two WRONG answers keep the per-step wait the exercise asks to remove, written without a
collective: (1) the store barrier torch itself uses in _store_based_barrier (store.add(key, 1), then poll
store.add(key, 0) until it reaches the world size), (2) a file barrier (touch step-rank, poll until every rank's
file exists). Each makes every rank wait for each step's slow rank, so the run takes as long as with the
original barrier (about twice the solution's time). Exit 0 if the check refuses both (the solution must pass).
"""

import os
import shutil
import tempfile
import time

import torch.distributed as dist
from _h import verdict

import barrierlab as bl
from barrierlab.exercises import nb05


def solution(folder, steps=4, delay=0.15, base_compute=0.05):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    loss = 0.0
    for step in range(steps):
        with bl.span("compute"):
            time.sleep(base_compute + (delay if rank == step % world_size else 0.0))
            loss += 1.0 / (step + 1)
    with bl.span("write metrics", kind="io"):
        with open(os.path.join(folder, f"metrics-{rank}.txt"), "w") as f:
            f.write(f"{loss:.4f}\n")
    dist.barrier()
    if rank == 0:
        with bl.span("read metrics", kind="io"):
            return sorted(os.listdir(folder))


def store_barrier_in_loop(folder, steps=4, delay=0.15, base_compute=0.05):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.distributed_c10d._get_default_store()
    loss = 0.0
    for step in range(steps):
        with bl.span("compute"):
            time.sleep(base_compute + (delay if rank == step % world_size else 0.0))
            loss += 1.0 / (step + 1)
        store.add(f"step{step}", 1)  # torch's _store_based_barrier, by hand
        while store.add(f"step{step}", 0) < world_size:
            time.sleep(0.002)
    with bl.span("write metrics", kind="io"):
        with open(os.path.join(folder, f"metrics-{rank}.txt"), "w") as f:
            f.write(f"{loss:.4f}\n")
    dist.barrier()
    if rank == 0:
        with bl.span("read metrics", kind="io"):
            return sorted(os.listdir(folder))


def file_barrier(sync):
    def file_barrier_in_loop(folder, steps=4, delay=0.15, base_compute=0.05):
        rank, world_size = dist.get_rank(), dist.get_world_size()
        loss = 0.0
        for step in range(steps):
            with bl.span("compute"):
                time.sleep(base_compute + (delay if rank == step % world_size else 0.0))
                loss += 1.0 / (step + 1)
            open(os.path.join(sync, f"{step}-{rank}"), "w").close()
            while not all(os.path.exists(os.path.join(sync, f"{step}-{r}")) for r in range(world_size)):
                time.sleep(0.002)
        with bl.span("write metrics", kind="io"):
            with open(os.path.join(folder, f"metrics-{rank}.txt"), "w") as f:
                f.write(f"{loss:.4f}\n")
        dist.barrier()
        if rank == 0:
            with bl.span("read metrics", kind="io"):
                return sorted(os.listdir(folder))

    return file_barrier_in_loop


def main():
    sync = tempfile.mkdtemp(prefix="a22-a08-")
    try:
        ok = nb05.check(solution, seed=1)
        print("solution:", ok)
        if not ok:
            raise SystemExit(2)
        accepted = []
        for name, fn in (("store barrier", store_barrier_in_loop), ("file barrier", file_barrier(sync))):
            v = nb05.check(fn, seed=1)
            print(f"{name} in the loop:", v)
            if v:
                accepted.append(name)
    finally:
        shutil.rmtree(sync, ignore_errors=True)
    verdict(bool(accepted), f"wrong answers accepted: {', '.join(accepted) or 'none'}")


if __name__ == "__main__":
    main()
