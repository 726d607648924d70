"""Notebook 04 §2 and its "On your own" answer (review17a): when a rank's process ends in the middle of a gloo
all_reduce, only the ranks waiting on it at that moment fail at once (a closed connection); the others wait the
group's timeout. Which ranks those are depends on gloo's algorithm and the tensor's size, so the lesson states
the measured sets, and this test keeps them true."""

from __future__ import annotations

import pytest

import barrierlab as bl

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]


def crash_in_all_reduce(crashing_rank: int, elements: int) -> int:
    import os

    import torch
    import torch.distributed as dist

    if dist.get_rank() == crashing_rank:
        os._exit(1)
    dist.all_reduce(torch.ones(elements))
    return elements


@pytest.mark.parametrize(
    "crashing, elements, at_once",
    [(1, 1, [0, 2]), (3, 1, [2]), (3, 1024, [0, 2])],
    ids=["rank 1, one element (04 §2)", "rank 3, one element", "rank 3, 1,024 elements"],
)
def test_only_the_ranks_waiting_on_the_crashed_one_fail_at_once(crashing, elements, at_once):
    run = bl.run(crash_in_all_reduce, 4, args=(crashing, elements), timeout=3, linger=True, deadline=20)
    # a generous split: a closed connection fails within milliseconds, the timeout after 3 s
    fast = sorted(e.rank for e in run.events if e.is_collective and e.duration < 1.5)
    slow = sorted(e.rank for e in run.events if e.is_collective and e.duration >= 1.5)
    assert (fast, slow) == (at_once, sorted(set(range(4)) - {crashing} - set(at_once))), run
