"""Every rank appends its result to a file that rank 0 creates and reads back: lines go missing, sometimes."""

import os
import random
import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main

#: How long a phase takes on one rank (seconds): a quick or a slow one...
PHASE_SECONDS = (0.0, 0.24)
#: ...and rank 0 also writes the run's config (phase 1) and evaluates a second validation set (phase 2).
#: With these numbers any two competing file accesses on different ranks are at least 80 ms apart, with
#: or without barriers: the seed decides their order, not the scheduler.
RANK0_EXTRA = (0.08, 0.08)
HEADER = "rank,accuracy"


def delays(seed, rank):
    """This rank's (setup, evaluate) seconds for ``seed``: random-looking, but the same in every run."""
    rng = random.Random(seed * 1000 + rank)
    setup, evaluate = rng.choice(PHASE_SECONDS), rng.choice(PHASE_SECONDS)
    if rank == 0:
        setup, evaluate = setup + RANK0_EXTRA[0], evaluate + RANK0_EXTRA[1]
    return setup, evaluate


def scenario(workdir="", seed=0, barrier_after=()):
    """Three phases; ``barrier_after`` names the phases followed by a (debugging) barrier."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    workdir = shared_folder(workdir)
    path = os.path.join(workdir, "results.csv")
    setup_time, evaluate_time = delays(seed, rank)

    with span("1 setup"):                               # phase 1: rank 0 starts a fresh results file
        time.sleep(setup_time)
        if rank == 0:
            with open(path, "w") as f:
                f.write(HEADER + "\n")
    if "setup" in barrier_after:
        dist.barrier()
    with span("2 evaluate"):                            # phase 2: every rank appends its result
        time.sleep(evaluate_time)
        accuracy = round(0.9 + rank / 100, 2)
        with open(path, "a") as f:
            f.write(f"{rank},{accuracy}\n")
    if "evaluate" in barrier_after:
        dist.barrier()
    if rank == 0:
        with span("3 report", "io"):                    # phase 3: rank 0 reads the results back
            with open(path) as f:
                rows = f.read().splitlines()[1:]
            return f"{len(rows)} of {world_size} results"
    return accuracy


if __name__ == "__main__":
    torchrun_main(scenario)
