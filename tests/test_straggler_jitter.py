"""The jitter cost model of notebook 05 §3, on its own numbers (no processes started)."""

from __future__ import annotations

import math

import pytest

from barrierlab.scenarios import straggler_jitter as sj


def test_step_times_are_seeded_per_rank_and_never_below_the_base():
    first = sj.step_seconds(seed=1, rank=2, steps=5, jitter=0.1, base_compute=0.02)
    assert first == sj.step_seconds(seed=1, rank=2, steps=5, jitter=0.1, base_compute=0.02)
    assert first != sj.step_seconds(seed=1, rank=3, steps=5, jitter=0.1, base_compute=0.02)
    assert min(first) >= 0.02
    assert sj.step_seconds(seed=1, rank=0, steps=3, jitter=0, base_compute=0.02) == [0.02] * 3


def test_the_model_sums_the_slowest_rank_of_each_stretch():
    per_rank = [sj.step_seconds(7, r, 6, 0.1, 0.02) for r in range(4)]
    every_step = sum(max(times[s] for times in per_rank) for s in range(6)) + 6 * 0.001
    at_the_end = max(sum(times) for times in per_rank) + 0.001
    assert sj.predicted_seconds(4, steps=6, jitter=0.1, seed=7, barrier_every=1) == pytest.approx(every_step)
    assert sj.predicted_seconds(4, steps=6, jitter=0.1, seed=7, barrier_every=0) == pytest.approx(at_the_end)


def test_the_expected_slowest_of_n_is_the_harmonic_number_of_n():
    assert sj.expected_step_seconds(1, jitter=0.1, base_compute=0.02, latency=0) == pytest.approx(0.12)
    harmonic = sum(1 / k for k in range(1, 1025))
    assert sj.expected_step_seconds(1024, jitter=0.1, base_compute=0.02, latency=0) == pytest.approx(
        0.02 + 0.1 * harmonic
    )
    assert harmonic == pytest.approx(math.log(1024) + 0.5772, abs=0.01)


def test_the_simulation_agrees_with_the_expectation_and_flattens_when_syncing_less():
    every_step = sj.simulate_step_seconds(256, 1, jitter=0.1)
    assert every_step == pytest.approx(sj.expected_step_seconds(256, jitter=0.1), rel=0.1)
    assert every_step > sj.simulate_step_seconds(256, 8, jitter=0.1) > sj.simulate_step_seconds(256, 0, jitter=0.1)
    assert sj.simulate_step_seconds(1024, 1, jitter=0.1) > sj.simulate_step_seconds(64, 1, jitter=0.1)


@pytest.mark.parametrize("shape", sj.SHAPES)
def test_every_shape_has_the_given_mean_extra(shape):
    draws = [t - 0.02 for r in range(200) for t in sj.step_seconds(3, r, 50, 0.1, 0.02, shape)]
    assert min(draws) >= 0
    assert sum(draws) / len(draws) == pytest.approx(0.1, rel=0.1)


def test_an_unknown_shape_is_refused_by_name():
    with pytest.raises(ValueError, match="shape"):
        sj.step_seconds(0, 0, 1, 0.1, 0.02, "gaussian")
    with pytest.raises(ValueError, match="shape"):
        sj.simulate_step_seconds(4, 1, shape="gaussian")


def test_how_the_slowest_of_n_grows_depends_on_the_tail():
    def added(shape, a, b):
        return sj.simulate_step_seconds(b, 1, jitter=0.1, shape=shape) - sj.simulate_step_seconds(
            a, 1, jitter=0.1, shape=shape
        )

    # bounded: nothing left to add once the slowest is near the bound (0.02 + 0.2 + latency)
    assert added("uniform", 128, 1024) < 0.005
    assert sj.simulate_step_seconds(1024, 1, jitter=0.1, shape="uniform") <= 0.02 + 0.2 + 0.001
    # exponential: each 8x adds about the same; heavy tail: each 8x adds more than the one before
    steps = [added("exponential", a, 8 * a) for a in (2, 16, 128)]
    assert max(steps) < 1.25 * min(steps)
    heavy = [added("lognormal", a, 8 * a) for a in (2, 16, 128)]
    assert heavy == sorted(heavy) and heavy[-1] > 2 * steps[-1]
