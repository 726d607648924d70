"""Notebook 04 §2 and its "On your own" answer (review17a, review25a): when a rank's process ends, the ranks whose
part of a gloo all_reduce exchanges data with it directly fail at once (a closed connection), whether they were
already waiting on it or reach the all_reduce later; the others wait the group's timeout. Which ranks those are
depends on gloo's algorithm and the tensor's size, so the lesson states the measured sets, and this test keeps
them true."""

from __future__ import annotations

import pytest

import barrierlab as bl

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]


def crash_in_all_reduce(crashing_rank: int, elements: int, delay: float = 0.0) -> int:
    import os
    import time

    import torch
    import torch.distributed as dist

    if dist.get_rank() == crashing_rank:
        os._exit(1)
    time.sleep(delay)  # the survivors reach the all_reduce this long after the crash
    dist.all_reduce(torch.ones(elements))
    return elements


@pytest.mark.parametrize(
    "crashing, elements, delay, at_once",
    [(1, 1, 0.0, [0, 2]), (1, 1, 1.0, [0, 2]), (3, 1, 0.0, [2]), (0, 1, 0.0, [1, 3]), (3, 1024, 0.0, [0, 2])],
    ids=[
        "rank 1, one element (04 §2)",
        "the same, survivors 1 s late",
        "rank 3, one element",
        "rank 0, one element: rank 3 too (the ring's link 3 -> 0; review35a)",
        "rank 3, 1,024 elements",
    ],
)
def test_only_the_ranks_that_exchange_data_with_the_crashed_one_fail_at_once(crashing, elements, delay, at_once):
    args = (crashing, elements, delay)
    run = bl.run(crash_in_all_reduce, 4, args=args, timeout=3, linger=True, deadline=20)
    # a generous split: a closed connection fails within milliseconds, the timeout after 3 s
    fast = sorted(e.rank for e in run.events if e.is_collective and e.duration < 1.5)
    slow = sorted(e.rank for e in run.events if e.is_collective and e.duration >= 1.5)
    assert (fast, slow) == (at_once, sorted(set(range(4)) - {crashing} - set(at_once))), run


def rank_0_exits_before_the_barrier() -> None:
    import os

    import torch.distributed as dist

    if dist.get_rank() == 0:
        os._exit(1)
    dist.barrier()


def test_the_closed_connection_error_blames_a_remote_worker_but_names_no_rank_or_error():
    """Notebook 01 §4 (review23a): had rank 0 exited, the others' error would blame "a remote worker" (torch 2.13's
    gloo message: "typically caused by a remote worker crashing" for a closed connection, "... hanging or bugs in
    the application" for a reset) but name neither rank 0 nor why it ended."""
    run = bl.run(rank_0_exits_before_the_barrier, 3, timeout=3, deadline=20)
    fast = [r for r in run if r.rank and r.status == "raised" and "Connection" in r.error_message]
    assert fast, run
    for r in fast:  # torch's own message (barrierlab's error_message keeps only its first words)
        message = str(r.exception)
        assert "typically caused by a remote worker" in message, message
        assert "rank 0" not in message and "exit" not in message.lower(), message


def test_at_eight_ranks_only_rank_0s_barrier_peers_fail_at_once_when_it_exits():
    """01 §4 and claims N03-4 (review36a): a barrier of 8 ranks whose rank 0 exits first. gloo's dissemination
    barrier pairs rank 0 with ranks 0 ± 1, 2, 4 (mod 8). Ranks 1 and 7 talk to it in the first round and fail at
    once on the closed connection; ranks 2, 4 and 6 talk to it later, and fail at once when they get that far
    (on a quiet machine all three did; when the others arrive after rank 0 exited, as in a loaded CI run or with
    the survivors 0.3 s late (review46a), 2 and 4 still wait in an earlier round, for a peer that had failed);
    ranks 3 and 5 never talk to rank 0 and wait the group's timeout, although its process is gone."""
    run = bl.run(rank_0_exits_before_the_barrier, 8, timeout=3, linger=True, deadline=30)
    fast = {e.rank for e in run.events if e.is_collective and e.duration < 1.5}
    slow = {e.rank for e in run.events if e.is_collective and e.duration >= 1.5}
    assert {1, 7} <= fast <= {1, 2, 4, 6, 7} and {3, 5} <= slow, run
    # review65a M1: without linger the ranks that failed exit, closing their connections: 3 and 5 fail too, at
    # once (0.04-0.06 s measured), not at the timeout
    gone = bl.run(rank_0_exits_before_the_barrier, 8, timeout=3, deadline=30)
    waited = {e.rank: e.duration for e in gone.events if e.is_collective}
    assert sorted(waited) == [1, 2, 3, 4, 5, 6, 7] and max(waited.values()) < 1.5, gone
