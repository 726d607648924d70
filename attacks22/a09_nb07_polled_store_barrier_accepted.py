"""attack22 a09: notebook 07's check accepts a barrier of every rank made by polling store.add.

Promise (src/barrierlab/exercises/nb07.py, notebook 07's exercise): ✓ only if "no rank waited for anyone but
rank 0"; "did a rank other than 0 wait for a rank other than 0 (a barrier, or a collective every rank must reach
...)?" A WRONG answer: the two store keys the solution's note allows ("created", "appended"), but the
"appended" wait is torch's own _store_based_barrier by hand -- every rank adds 1, then polls store.add(key, 0)
until all ranks have added -- so every rank waits for the last rank, rank 0 or not. The check skips every edge
into a store add ("it never waits for anyone"), but a loop of adds does wait. The attack then runs the answer
itself with seed 14 (a rank other than 0 finishes last) and prints how long ranks 1-3 spent waiting. Exit 0 if
the check refuses the answer.
"""

import os
import shutil
import tempfile
import time

import torch.distributed as dist
from _h import verdict

import barrierlab as bl
from barrierlab.exercises import nb07
from barrierlab.scenarios import race_results_file


def polled_store_barrier(workdir, seed=0):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.distributed_c10d._get_default_store()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    if rank == 0:
        with open(path, "w") as f:
            f.write(race_results_file.HEADER + "\n")
        store.set("created", "1")
    else:
        store.wait(["created"])
    time.sleep(evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    with open(path, "a") as f:
        f.write(f"{rank},{accuracy}\n")
    store.add("appended", 1)
    t = time.monotonic()
    while store.add("appended", 0) < world_size:  # every rank waits for every rank
        time.sleep(0.002)
    waited = time.monotonic() - t
    if rank == 0:
        with open(path) as f:
            rows = f.read().splitlines()[1:]
        return f"{len(rows)} of {world_size} results"
    return waited


def main():
    v = nb07.check_results(polled_store_barrier)
    print("check:", v)
    d = tempfile.mkdtemp(prefix="a22-a09-")
    try:
        run = bl.run(polled_store_barrier, 4, kwargs=dict(workdir=d, seed=14), timeout=5)
        for r in range(1, 4):
            print(
                f"seed 14: rank {r} waited {run[r].value:.3f} s in the store loop "
                f"(its phases: {race_results_file.delays(14, r)})"
            )
    finally:
        shutil.rmtree(d, ignore_errors=True)
    verdict(
        bool(v),
        "a barrier of every rank made of polled store.add calls is accepted as 'no rank waited for anyone but rank 0'",
    )


if __name__ == "__main__":
    main()
