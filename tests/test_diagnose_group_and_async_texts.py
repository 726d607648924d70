"""Two texts review58b found misleading, on runs that finished: a group only its members made ("a collective
reached by only some ranks", the run's finishing unsaid; torch wants every rank to make every group), and a
barrier(async_op=True) never waited for ("a result that cannot be trusted", "read its tensors": a barrier has
none, what it loses is the ordering)."""

from __future__ import annotations

import pytest

import barrierlab as bl


def pair_makes_its_own_group():
    import torch.distributed as dist

    if dist.get_rank() in (0, 1):
        pair = dist.new_group([0, 1])
        dist.barrier(group=pair)


def barrier_never_waited():
    import torch.distributed as dist

    dist.barrier(async_op=True)


@pytest.mark.timeout(120)
def test_a_group_made_by_members_only_is_named_as_such_on_a_finished_run():
    run = bl.run(pair_makes_its_own_group, 3, timeout=5)
    assert run.statuses == ["finished"] * 3
    diagnosis = run.diagnosis
    assert diagnosis.headline.startswith("Every rank finished, but a group was made by only some ranks"), diagnosis
    assert "rank 2 never did" in diagnosis.headline and "every rank of the world" in diagnosis.advice


@pytest.mark.timeout(120)
def test_an_unwaited_async_barrier_loses_its_ordering_not_a_result():
    run = bl.run(barrier_never_waited, 2, timeout=5)
    text = str(run.diagnosis)
    assert "whose ordering cannot be trusted" in text and "it ordered nothing" in text, text
    assert "tensors" not in text and "whose result" not in text, text
