"""Ranks that ask ``new_group`` for different members at the same call: torch requires every rank to make the
same groups in the same order, members or not (new_group's docstring). Modelled on pytorch/pytorch#130102 (each
rank made only the subgroup it belongs to, then a barrier on it; attack25 a06). The run may hang, fail or finish
by chance: the diagnosis names the call and what each rank passed whichever happens, and the right ways stay
quiet."""

from __future__ import annotations

import inspect

import pytest
import torch.distributed as dist

import barrierlab as bl


def own_subgroup_only():
    rank = dist.get_rank()
    members = [0, 3] if rank in (0, 3) else [1, 2]
    group = dist.new_group(ranks=members)  # THE CALL
    dist.barrier(group=group)
    return rank


def every_group_on_every_rank():
    mine = None
    for members in ([0, 3], [1, 2]):
        group = dist.new_group(members)
        if dist.get_rank() in members:
            mine = group
    dist.barrier(group=mine)
    return dist.get_process_group_ranks(mine)


def by_enumeration():
    mine, _ = dist.new_subgroups_by_enumeration([[0, 3], [1, 2]])
    dist.barrier(group=mine)
    return dist.get_process_group_ranks(mine)


def local_synchronization():
    rank = dist.get_rank()
    members = [0, 3] if rank in (0, 3) else [1, 2]
    group = dist.new_group(members, use_local_synchronization=True)
    dist.barrier(group=group)
    return dist.get_process_group_ranks(group)


def test_ranks_that_ask_for_different_members_are_told_so_whatever_the_run_did():
    run = bl.run(own_subgroup_only, 4, timeout=3, deadline=12)
    d = run.diagnosis
    line = inspect.getsourcelines(own_subgroup_only)[1] + 3
    assert d.kind == "different-group-members", str(d)
    assert d.headline.startswith("new_group #1 at "), d.headline
    assert f"test_new_group_members.py:{line}" in d.headline
    assert "ranks 0 and 3 passed [0, 3] and ranks 1 and 2 passed [1, 2]" in d.headline
    assert "new_subgroups_by_enumeration([[0, 3], [1, 2]])" in d.advice
    assert [e for e in d.evidence if e.startswith("rank 1: new_group #1") and e.endswith("ranks=[1, 2]")]


@pytest.mark.parametrize("fn", [every_group_on_every_rank, by_enumeration, local_synchronization])
def test_the_right_ways_to_make_subgroups_are_not_told_as_different_members(fn):
    run = bl.run(fn, 4, timeout=5, deadline=20)
    assert run.ok, run.diagnosis
    assert run.diagnosis.kind == "ok", str(run.diagnosis)
    assert [r.value for r in run.ranks] == [[0, 3], [1, 2], [1, 2], [0, 3]]


def generator_of_ranks():
    world = dist.get_world_size()
    group = dist.new_group(r for r in range(world) if r % 2 == 0)  # an iterator torch reads once
    if dist.get_rank() % 2 == 0:
        dist.barrier(group=group)
    return dist.get_world_size(group) if dist.get_rank() % 2 == 0 else None


def own_pair_first(sort: bool):
    rank = dist.get_rank()
    first, second = (rank, rank ^ 1), (rank ^ 2, rank ^ 3)
    members = [first, tuple(sorted(second))] if rank < 2 else [tuple(sorted(second)), first]
    made = [dist.new_group(list(m), sort_ranks=sort) for m in members]
    return len(made)


def test_the_recorder_never_reads_the_ranks_torch_is_given():
    # attack27 a14: a generator of ranks, which torch accepts (it sorts it), was read by the recorder first: every
    # rank then raised TypeError under barrierlab, while torchrun finished
    run = bl.run(generator_of_ranks, 4, timeout=5, deadline=20)
    assert run.ok, run.diagnosis
    assert run.values == [2, None, 2, None]


def test_the_same_members_in_another_order_with_sort_ranks_false_are_another_group():
    # attack27 a01: each rank listed itself first with sort_ranks=False; the recorder sorted the lists, so the
    # hang was told as "still busy, give a longer deadline"
    run = bl.run(own_pair_first, 4, args=(False,), timeout=3, deadline=10)
    d = run.diagnosis
    assert d.kind == "different-group-members", str(d)
    assert "sort_ranks=False" in d.headline and "same order" in d.advice


def members_only_make_the_group():
    """review64b C1: rank 3 skips a new_group the others make; nothing later needs the groups to agree."""
    rank = dist.get_rank()
    if rank != 3:
        dist.new_group([0, 1, 2])  # SKIPPED BY RANK 3
    dist.barrier()
    return rank


def members_only_then_a_group_of_everyone():
    rank = dist.get_rank()
    if rank != 3:
        dist.new_group([0, 1, 2])
    everyone = dist.new_group([0, 1, 2, 3])
    dist.barrier(group=everyone)
    return rank


def test_a_new_group_some_ranks_skip_is_named_not_taken_for_a_mismatch_with_the_next_call():
    """It was diagnosed as 'Different collectives at the same position: call #1 is ranks 0-2's new_group ... and
    rank 3's barrier', with advice about ranks that wait, of a run where every rank finished: on gloo new_group
    takes no place in the group's sequence, and the barriers paired."""
    run = bl.run(members_only_make_the_group, 4, timeout=5)
    assert run.ok, run
    d = run.diagnosis
    line = inspect.getsourcelines(members_only_make_the_group)[1] + 4
    assert d.kind == "only-some-ranks" and d.ranks == [0, 1, 2], str(d)
    assert d.headline.startswith(
        "Every rank finished, but a group was made by only some ranks: ranks 0–2 called new_group #1 at "
        f"tests/test_new_group_members.py:{line}"
    ), d
    assert d.headline.endswith("rank 3 never did.") and "same position" not in str(d), str(d)
    # the next group every rank makes has another name on rank 3 (torch counts new_group calls): it never connects
    hung = bl.run(members_only_then_a_group_of_everyone, 4, timeout=3, deadline=10)
    assert not hung.ok and hung.diagnosis.kind == "different-group-members", str(hung.diagnosis)
    # review65b M1: told as the skip it is, not as one call given different lists
    first = inspect.getsourcelines(members_only_then_a_group_of_everyone)[1]
    assert hung.diagnosis.headline.startswith(
        f"rank 3 never made the new_group at tests/test_new_group_members.py:{first + 3} ([0, 1, 2]) that ranks 0–2 "
        f"made, so rank 3's next new_group, at tests/test_new_group_members.py:{first + 4} ([0, 1, 2, 3]), took its "
        "number: new_group #1."
    ), hung.diagnosis.headline


def skipped_group_errors_caught():
    """review74c M2: ranks 0 and 1 make a group the others skip, then every rank makes one more and a barrier on
    it, catching what they raise: every function returns, though every rank's call on the later group failed."""
    from datetime import timedelta

    rank = dist.get_rank()
    if rank < 2:
        dist.new_group([0, 1])
    try:
        g = dist.new_group([0, 1, 2, 3], timeout=timedelta(seconds=1))
        dist.barrier(group=g)
    except Exception as error:  # noqa: BLE001 - the point of the program
        return type(error).__name__
    return "ok"


@pytest.mark.timeout(120)
def test_a_finished_run_with_differing_groups_does_not_say_it_finished_by_chance_alone():
    run = bl.run(skipped_group_errors_caught, 4, timeout=1, deadline=60)
    assert run.statuses == ["finished"] * 4, run
    d = run.diagnosis
    assert d.kind == "different-group-members", d
    assert "the ranks' own code caught the errors of their calls" in d.headline, d.headline
    assert "This run finished, by chance." not in d.headline, d.headline
