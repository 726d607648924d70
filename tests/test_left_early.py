"""``ordering.left_early``: who left a collective before the late rank arrived (measured on gloo) and who may
(the model, on gloo and on NCCL's host side), from real 4-rank runs of notebook 00's scenario, rank 3 late
by 0.4 s. The model never claims a wait the run contradicts, and the NCCL column follows the ops table."""

from __future__ import annotations

import pytest

import barrierlab as bl
from barrierlab import ordering
from barrierlab.scenarios import who_leaves_early

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]

OTHERS = frozenset({0, 1, 2})


def _left_early(op: str, late_rank: int = 3, *, formed: bool = True) -> ordering.LeftEarly:
    run = bl.run(who_leaves_early.scenario, 4, kwargs={"op": op, "late_rank": late_rank}, timeout=10)
    assert run.ok, run.diagnosis.headline
    return ordering.left_early(run, late_rank, formed=formed)


@pytest.mark.parametrize("op", ["barrier", "all_reduce", "all_gather"])
def test_every_rank_waits_on_gloo_for_an_every_rank_collective(op):
    row = _left_early(op)
    assert row.measured == row.gloo == frozenset()


def test_only_the_barrier_keeps_its_order_on_nccl():
    assert _left_early("barrier").nccl == frozenset()
    assert _left_early("all_reduce").nccl == OTHERS


def test_a_broadcast_root_leaves_before_a_late_leaf_and_the_model_allows_it():
    row = _left_early("broadcast")
    assert 0 in row.measured  # rank 0 sends to ranks 1 and 2 only
    assert row.measured <= row.gloo
    assert row.nccl == OTHERS


def test_an_async_call_returns_before_the_late_rank_arrives_on_either_backend():
    row = _left_early("all_reduce(async_op=True)")
    assert row.call == "all_reduce (async_op=True)"
    assert row.measured == row.gloo == row.nccl == OTHERS


@pytest.mark.parametrize("op", ["all_reduce", "broadcast", "all_reduce(async_op=True)"])
def test_a_lazily_formed_nccl_group_holds_every_rank_in_its_first_collective(op):
    row = _left_early(op, formed=False)  # no device_id=: this first call forms the communicator (ncclCommInitRank)
    assert row.nccl == frozenset()
    assert row.gloo == _left_early(op).gloo  # gloo has no such step


@pytest.mark.parametrize("op", ["gather", "scatter"])
def test_a_rooted_call_holds_its_root_and_frees_the_others_on_gloo(op):
    row = _left_early(op, late_rank=1)  # rank 0 is the root: it waits for rank 1; ranks 2 and 3 do not
    assert 0 not in row.gloo and {2, 3} <= row.gloo
    assert row.measured <= row.gloo


def test_the_table_says_who_left_in_words():
    rows = {op: _left_early(op) for op in ("barrier", "all_reduce")}
    lines = ordering.left_early_table(rows).splitlines()
    assert "on gloo: left before rank 3 arrived (measured)" in lines[0] and "on NCCL" in lines[0]
    assert lines[1].split() == ["barrier", "nobody", "nobody"]
    assert lines[2].split() == ["all_reduce", "nobody", "ranks", "0,", "1,", "2"]
    assert lines[-1] == ordering.NCCL_FORMED_NOTE and "device_id" in lines[-1]


def test_arguments_are_checked_first():
    run = bl.run(who_leaves_early.scenario, 4, kwargs={"op": "barrier", "late_by": 0.0}, timeout=10)
    with pytest.raises(TypeError, match="late_rank"):
        ordering.left_early(run, "3")
    with pytest.raises(ValueError, match="late_rank"):
        ordering.left_early(run, 4)
    with pytest.raises(ValueError, match="call"):
        ordering.left_early(run, 3, call=0)
    with pytest.raises(ValueError, match="fewer than 2"):
        ordering.left_early(run, 3, call=2)
    with pytest.raises(TypeError, match="formed"):
        ordering.left_early(run, 3, formed="no")
