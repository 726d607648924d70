"""The lessons' ordering tables, from real runs: what a run's calls order on gloo (as recorded) and on NCCL (the
model's host view from the same record), for the hand-over of 06 §6 and the On-GPUs boxes of 04-07."""

from __future__ import annotations

import pytest

import barrierlab as bl
from barrierlab import ordering_table
from barrierlab.scenarios import checkpoint_delete_race, collective_ordering, store_handoff, straggler_all_reduce

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]

WRITE, READ = (3, "write shard"), (0, "read shards")


@pytest.fixture(scope="module")
def handoff_runs(tmp_path_factory):
    ops = ("barrier", "all_reduce", "broadcast", "all_reduce(async_op=True)", "all_reduce(async_op=True) + wait()")
    return {
        op: bl.run(collective_ordering.scenario, 4, kwargs={"op": op, "folder": str(tmp_path_factory.mktemp(op[:10]))})
        for op in ops
    }


def test_the_handoff_table_orders_the_late_write_by_barrier_and_blocking_all_reduce_on_gloo(handoff_runs):
    rows = {row.label: row for row in ordering_table.handoff_table(handoff_runs, WRITE, READ)}
    assert {label: row.gloo for label, row in rows.items()} == {
        "barrier": True,
        "all_reduce": True,
        "broadcast": False,
        "all_reduce(async_op=True)": False,
        "all_reduce(async_op=True) + wait()": True,
    }


def test_on_nccl_only_the_barrier_orders_the_late_write(handoff_runs):
    rows = ordering_table.handoff_table(handoff_runs, WRITE, READ)
    assert [row.label for row in rows if row.nccl] == ["barrier"]


def test_the_gloo_column_agrees_with_what_rank_0_saw(handoff_runs):
    """Rank 3 writes 0.3 s late: rank 0 saw its shard exactly where the model orders the write before the read."""
    rows = ordering_table.handoff_table(handoff_runs, WRITE, READ)
    assert [row.gloo for row in rows] == [handoff_runs[row.label][0].value[0] for row in rows]


def test_a_phase_the_run_did_not_record_is_a_value_error(handoff_runs):
    with pytest.raises(ValueError, match="no event named 'write shards'"):
        ordering_table.phase_before(handoff_runs["barrier"], (3, "write shards"), READ)
    with pytest.raises(ValueError, match="at least one run"):
        ordering_table.handoff_table({}, WRITE, READ)


def test_the_nccl_view_keeps_the_barrier_and_loses_the_all_reduce():
    run = bl.run(straggler_all_reduce.scenario, 4, kwargs={"steps": 2, "delay": 0.1, "extra_barrier": True})
    view = ordering_table.nccl_view(run)
    assert view.by_call() == {"barrier": (8, 8), "all_reduce": (8, 0)}
    assert {w.event.name for w in view.lost} == {"all_reduce"} and view.files_lost == ()
    assert "all_reduce" in str(view) and "none" in str(view)


def test_the_nccl_view_table_says_it_counts_only_the_calls_the_code_made():
    run = bl.run(straggler_all_reduce.scenario, 2, kwargs={"steps": 1, "delay": 0.1})
    header = str(ordering_table.nccl_view(run)).splitlines()[0]
    assert (
        header
        == "calls your code made that wait for other ranks, added up over the ranks (DDP's own all_reduces are not counted)"
    )


def test_a_waited_barrier_names_every_other_rank():
    run = bl.run(straggler_all_reduce.scenario, 2, kwargs={"steps": 1, "delay": 0.1, "extra_barrier": True})
    barrier = next(w for w in ordering_table.waits(run) if w.rank == 0 and w.event.name == "barrier")
    assert barrier.on == {1} and str(barrier).startswith("rank 0's barrier #1 at straggler_all_reduce.py, line ")


def test_a_store_key_orders_the_same_on_both_backends(tmp_path):
    run = bl.run(store_handoff.scenario, 3, kwargs={"folder": str(tmp_path)})
    view = ordering_table.nccl_view(run)
    assert run.ok and view.lost == () and view.files_lost == ()
    assert {w.rank for w in view.gloo} == {1, 2} and all(w.on == {0} for w in view.gloo)
    assert view.by_call() == {"store.wait": (2, 2), "store.get": (2, 2)}


def test_the_nccl_view_lists_the_file_handoffs_a_blocking_all_reduce_ordered(tmp_path):
    run = bl.run(
        checkpoint_delete_race.scenario, 4, kwargs={"directory": str(tmp_path), "sync": "all_reduce"}, timeout=10
    )
    view = ordering_table.nccl_view(run)
    assert run.ok and run.races() == []
    assert len(view.files_lost) == 3 and {(a.how, b.how) for a, b in view.files_lost} <= {
        ("read", "remove"),
        ("remove", "read"),
    }
    assert "file handoffs ordered on gloo, not on NCCL: 3" in str(view)


def test_the_headline_counts_what_nccl_keeps():
    run = bl.run(straggler_all_reduce.scenario, 2, kwargs={"steps": 1, "delay": 0.1, "extra_barrier": True})
    assert ordering_table.nccl_view(run).headline() == (
        "4 calls wait for other ranks on gloo, added up over the ranks (barrier 2, all_reduce 2), 2 still would on NCCL; "
        "file handoffs ordered on gloo, not on NCCL: none"
    )


@pytest.mark.parametrize("late_rank, ordered", [(1, True), (2, True), (3, False)])
def test_a_gloo_broadcast_orders_its_roots_direct_children_only(tmp_path, late_rank, ordered):
    """gloo's broadcast from rank 0 of 4 sends to ranks 1 and 2 (gloo/broadcast.cc's binomial tree) and waits for
    those sends, so rank 0 leaves after they entered: a late shard of rank 1 or 2 is always seen, rank 3's not.
    The model said "nothing orders them" for every rank until it knew the tree (a fresh review found the 05 check
    naming rank 1)."""
    run = bl.run(
        collective_ordering.scenario, 4, kwargs={"op": "broadcast", "folder": str(tmp_path), "late_rank": late_rank}
    )
    [row] = ordering_table.handoff_table({"broadcast": run}, (late_rank, "write shard"), READ)
    assert row.gloo is ordered
    assert run[0].value[0] is ordered  # what rank 0 saw agrees with the model
