"""Debug barriers left in a loop with no collective of its own: every step waits for that step's slowest rank."""

import os
import random
import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def debug_barrier():
    """A barrier only when DEBUG_BARRIERS=1: there to bisect a race, absent (and free) by default."""
    if os.environ.get("DEBUG_BARRIERS") == "1":
        dist.barrier()


def step_seconds(seed, rank, steps=20, jitter=0.03):
    """This rank's time for each step: 0 to ``jitter`` seconds, the same in every run for a given seed."""
    rng = random.Random(seed * 1000 + rank)
    return [rng.uniform(0, jitter) for _ in range(steps)]


def scenario(steps=20, jitter=0.03, seed=0):
    """A preprocessing loop (decode, augment, write a shard): no collective, so ranks run at their own pace."""
    rank = dist.get_rank()
    seconds = step_seconds(seed, rank, steps, jitter)
    for step in range(steps):
        with span("step"):
            time.sleep(seconds[step])  # stands in for this rank's work on one batch
        debug_barrier()
    return rank


def predicted_seconds(world_size, steps=20, jitter=0.03, seed=0, debug_barriers=False, latency=0.001):
    """The cost model of notebook 05: with a barrier per step, each step takes its slowest rank's time plus
    the barrier latency; without, each rank runs at its own pace and the loop ends with the slowest total."""
    per_rank = [step_seconds(seed, rank, steps, jitter) for rank in range(world_size)]
    if debug_barriers:
        return sum(max(step) for step in zip(*per_rank)) + steps * latency
    return max(sum(times) for times in per_rank)


if __name__ == "__main__":
    torchrun_main(scenario)
