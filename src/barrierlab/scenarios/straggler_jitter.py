"""Every rank's step takes a random extra time (per-rank jitter); a barrier every k steps makes the group pay
for the slowest rank of each stretch. How the expected slowest of N grows with N depends on the jitter's
shape: like ln N for exponential jitter, not at all past its bound for bounded jitter, faster for heavy tails."""

import math
import os
import random
import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main

#: The jitter shapes, each with mean ``jitter``: bounded, exponential (light-tailed, unbounded), heavy-tailed.
SHAPES = ("uniform", "exponential", "lognormal")
LOGNORMAL_SIGMA = 1.0


def _extra(rng, shape, jitter):
    """One random extra with mean ``jitter``: uniform on [0, 2 jitter], exponential, or lognormal (sigma 1)."""
    if shape == "uniform":
        return rng.uniform(0, 2 * jitter)
    if shape == "exponential":
        return rng.expovariate(1 / jitter)
    if shape == "lognormal":
        return rng.lognormvariate(math.log(jitter) - LOGNORMAL_SIGMA**2 / 2, LOGNORMAL_SIGMA)
    raise ValueError(f"shape must be one of {SHAPES}, not {shape!r}")


def step_seconds(seed, rank, steps, jitter, base_compute, shape="exponential"):
    """This rank's step times: ``base_compute`` plus a random extra of the given ``shape`` with mean ``jitter``
    (seeded)."""
    rng = random.Random(f"{seed}/{rank}")
    return [base_compute + _extra(rng, shape, jitter) if jitter else base_compute for _ in range(steps)]


def scenario(steps=8, jitter=0.05, base_compute=0.02, barrier_every=1, seed=0, one_cpu=False, shape="exponential"):
    """Each step sleeps this rank's seeded step time, then maybe waits at a barrier (0: only at the end).

    ``one_cpu=True`` pins the rank to one CPU (as on a 1-CPU Binder pod), to measure noise there.
    Returns the seconds each step actually took on this rank, barrier included.
    """
    if one_cpu:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rank = dist.get_rank()
    durations, took = step_seconds(seed, rank, steps, jitter, base_compute, shape), []
    for step in range(steps):
        start = time.perf_counter()
        with span("compute"):
            time.sleep(durations[step])
        if barrier_every and (step + 1) % barrier_every == 0:
            dist.barrier()
        took.append(time.perf_counter() - start)
    if not barrier_every or steps % barrier_every:
        dist.barrier()
    return took


def predicted_seconds(
    world_size, steps=8, jitter=0.05, base_compute=0.02, barrier_every=1, seed=0, latency=0.001, shape="exponential"
):
    """The cost model for these very draws: sum over stretches of the slowest rank's compute, plus latency each."""
    per_rank = [step_seconds(seed, r, steps, jitter, base_compute, shape) for r in range(world_size)]
    every = barrier_every or steps
    return sum(
        max(sum(times[first : first + every]) for times in per_rank) + latency for first in range(0, steps, every)
    )


def expected_step_seconds(world_size, jitter=0.05, base_compute=0.02, latency=0.001):
    """The model's expectation with a barrier every step, for exponential jitter only: the mean of the maximum
    of N exponentials is ``jitter`` times the harmonic number H_N = 1 + 1/2 + ... + 1/N (about ln N + 0.58)."""
    return base_compute + jitter * sum(1 / k for k in range(1, world_size + 1)) + latency


def simulate_step_seconds(
    world_size,
    barrier_every,
    steps=64,
    jitter=0.05,
    base_compute=0.02,
    latency=0.001,
    trials=20,
    seed=0,
    shape="exponential",
):
    """A simulation, not a measurement: the cost model's mean time per step for ``world_size`` ranks, drawing
    jitter of the given ``shape`` (mean ``jitter``) ``trials`` times (``barrier_every=0``: one barrier at the end)."""
    import numpy as np

    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, not {shape!r}")
    rng = np.random.default_rng(seed)
    every = barrier_every or steps
    stretches = math.ceil(steps / every)
    size = (world_size, stretches * every)
    total = 0.0
    for _ in range(trials):
        if shape == "uniform":
            extra = rng.uniform(0, 2 * jitter, size=size)[:, :steps]
        elif shape == "lognormal":
            extra = rng.lognormal(math.log(jitter) - LOGNORMAL_SIGMA**2 / 2, LOGNORMAL_SIGMA, size=size)[:, :steps]
        else:
            extra = rng.exponential(jitter, size=size)[:, :steps]
        sums = np.add.reduceat(extra, range(0, steps, every), axis=1)
        total += sums.max(axis=0).sum() + steps * base_compute + stretches * latency
    return total / trials / steps


if __name__ == "__main__":
    torchrun_main(scenario)
