"""05 "In practice" and claims N05-23 (review37b): `barrier(async_op=True)` plus work while waiting (05 §8) saves time
when a different rank is slow each step, because each rank's wait hides behind its own prefetch; when the same rank
is slow every step (rank 0 logging each step), that rank is the last to arrive every time and its prefetch comes
after its compute either way, so the step takes as long as before. Wall times from real 4-rank gloo runs; the bounds
are wide (the two savings differ by about a second)."""

from __future__ import annotations

import time

import pytest

import barrierlab as bl
from barrierlab.scenarios.overlap_async_barrier import scenario

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]


def _wall(overlap: bool, slow_rank: int | None) -> float:
    kwargs = dict(steps=6, delay=0.3, base_compute=0.05, prefetch=0.3, overlap=overlap, slow_rank=slow_rank)
    start = time.perf_counter()
    bl.run(scenario, 4, kwargs=kwargs, record=False, live=False).raise_if_failed()
    return time.perf_counter() - start


def test_overlap_saves_with_a_rotating_straggler_and_not_with_a_fixed_one():
    bl.run(scenario, 4, kwargs=dict(steps=1, delay=0, prefetch=0), record=False, live=False)  # the warm process starts
    saved = {}
    for slow_rank in (None, 0):
        saved[slow_rank] = _wall(False, slow_rank) - _wall(True, slow_rank)
    # measured 2026-12-05: rotating about 0.23 s a step hidden (0.91 s over 4 steps), fixed -0.01 s
    assert saved[None] > 0.7, saved
    assert saved[0] < 0.35, saved
