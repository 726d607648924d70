"""Promise 4 (a learner's CORRECT answer that differs from the expected one is accepted): notebook 07's exercise
(fix race_results_file's two races without barriers), answered with store keys as its docstring suggests, but
counting the appends with a store queue instead of a counter.

Rank 0 creates the file and sets "created"; every rank waits for it, appends its line, then
`store.queue_push("appended", rank)`; rank 0 pops world_size items (each pop returns only once some rank pushed)
and only then reads the file. Correct: rank 0 reads after every rank's push, each push after that rank's
append, and no rank but 0 waits for anyone. The same answer with `store.add("appended", 1)` and polling the
counter passes (checked); with the queue, check_results says "✗ not yet: ... rank 0 read results.csv ... after
rank 1 appended to it ..., but nothing orders them" (the model orders a queue_pop after the key's first push
only: see a18)."""

import os
import sys
import time

import torch.distributed as dist

from barrierlab.exercises.nb07 import check_results
from barrierlab.scenarios import race_results_file as rrf


def with_queue(workdir="", seed=0):
    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup, evaluate = rrf.delays(seed, rank)
    store = dist.distributed_c10d._get_default_store()
    time.sleep(setup)
    if rank == 0:
        with open(path, "w") as f:
            f.write(rrf.HEADER + "\n")
        store.set("created", "1")
    else:
        store.wait(["created"])
    time.sleep(evaluate)
    accuracy = round(0.9 + rank / 100, 2)
    with open(path, "a") as f:
        f.write(f"{rank},{accuracy}\n")
    store.queue_push("appended", str(rank))
    if rank == 0:
        for _ in range(world):  # one item per rank: every rank has appended
            store.queue_pop("appended")
        with open(path) as f:
            rows = f.read().splitlines()[1:]
        return f"{len(rows)} of {world} results"
    return accuracy


def main():
    verdict = check_results(with_queue)
    print(str(verdict)[:400])
    if not str(verdict).startswith("✓"):
        print("BROKEN: a correct answer (store queue) is refused")
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("BARRIERLAB_LIVE", "0")
    sys.exit(main())
