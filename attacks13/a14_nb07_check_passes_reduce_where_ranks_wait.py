"""Promise 4 (exercise checks and the ordering model are right) for notebook 07's check_results.

The exercise: results reach rank 0 without lining every rank up; the check rejects an answer in which "a rank
other than 0 waited for a rank other than 0". An answer that sends the results with dist.reduce(one_hot, dst=0)
passes with "no rank waited for anyone but rank 0". But on gloo a reduce holds every non-root rank until the
slowest rank arrives: measured below, with rank 1 one second late, ranks 2 and 3 spend ~1 s inside the reduce.
Cause: ops.py gives gloo's reduce non_root="children" ("a non-root waits for the ranks below it"), and the model
adds no edge for "children" outside broadcast (ordering.Order._collectives), so nb07's check
(exercises/nb07.py, the loop over order.edges_into) sees no wait between non-root ranks.
"""

import os
import sys
import time

import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises import nb07
from barrierlab.scenarios import race_results_file


def my_results(workdir, seed=0):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(workdir, "results.csv")
    setup_s, evaluate_s = race_results_file.delays(seed, rank)
    time.sleep(setup_s)
    time.sleep(evaluate_s)
    accuracy = round(0.9 + rank / 100, 2)
    box = torch.zeros(world_size, dtype=torch.float64)
    box[rank] = accuracy
    dist.reduce(box, dst=0)  # every result goes to the one writer
    if rank == 0:
        lines = [f"{r},{round(v, 2)}" for r, v in enumerate(box.tolist())]
        with open(path + ".tmp", "w") as f:
            f.write("\n".join([race_results_file.HEADER, *lines]) + "\n")
        os.replace(path + ".tmp", path)
        return f"{world_size} of {world_size} results"
    return accuracy


def time_in_reduce(slow):
    if dist.get_rank() == slow:
        time.sleep(1.0)
    start = time.monotonic()
    dist.reduce(torch.ones(4, dtype=torch.float64), dst=0)
    return round(time.monotonic() - start, 2)


if __name__ == "__main__":
    os.environ["BARRIERLAB_LIVE"] = "0"
    verdict = str(nb07.check_results(my_results))
    print("check:", verdict[:300])
    waits = bl.run(time_in_reduce, world_size=4, args=(1,), live=False).values
    print("seconds inside reduce with rank 1 one second late:", waits)
    waited = [r for r in (2, 3) if waits[r] >= 0.5]
    if verdict.startswith("✓") and "no rank waited for anyone but rank 0" in verdict and waited:
        print(f"BROKEN: the check says no rank waited for anyone but rank 0; ranks {waited} waited ~1 s for rank 1")
        sys.exit(1)
    print("held")
