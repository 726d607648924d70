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
