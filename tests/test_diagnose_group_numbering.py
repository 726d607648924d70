"""review78d C3, C5, M1, D1, D2: ``new_group`` and subgroups in the numbering and the texts. The diagnosis, the
ledger and the summary line give a call one number (``calls.call_numbers``): a new_group takes no place in the
default group's sequence (torch 2.13 runs no collective on it for new_group; on gloo only the new group's members
connect, to each other), and a subgroup's calls are numbered on the subgroup."""

from __future__ import annotations

import inspect

import pytest

import barrierlab as bl


def members_wait_in_their_group_the_others_in_the_default_one():
    """review78d f31: ranks 0 and 1 use their pair's group, ranks 2 and 3 the default group."""
    import torch.distributed as dist

    g01 = dist.new_group([0, 1])
    dist.new_group([2, 3])
    if dist.get_rank() in (0, 1):
        dist.barrier(group=g01)  # THEIR LAST
    else:
        dist.barrier()  # THE DEFAULT GROUP'S


@pytest.mark.timeout(180)
def test_a_call_after_new_groups_has_the_ledgers_number_and_the_ranks_last_call_is_their_subgroups():
    run = bl.run(members_wait_in_their_group_the_others_in_the_default_one, 4, timeout=3, live=False)
    lines, first = inspect.getsourcelines(members_wait_in_their_group_the_others_in_the_default_one)
    last = first + next(i for i, line in enumerate(lines) if "THEIR LAST" in line)
    default = first + next(i for i, line in enumerate(lines) if "THE DEFAULT GROUP'S" in line)
    d = run.diagnosis
    text = str(d)
    # D1: the ledger's row 1 (the flight recorder's position) is the diagnosis's #1, not "barrier #3"
    assert f"ranks 2 and 3 called barrier #1 at tests/test_diagnose_group_numbering.py:{default}" in d.headline, text
    assert "#3" not in text, text
    ledger = run.ledger().splitlines()
    assert ledger[1].startswith("1  —       —       barrier @ line"), run.ledger()
    # C5: their last call was the barrier on their subgroup, made after the new_group calls
    assert (
        "ranks 0 and 1 never made a 1st collective call on the default group: they returned from the function after "
        "0 collective calls on the default group, 1 on the group of ranks [0, 1] and 2 new_group calls; their last "
        f"was barrier #1 of the subgroup of ranks [0, 1] at "
        f"tests/test_diagnose_group_numbering.py:{last}"
    ) in text, text
    assert "last was new_group" not in text, text


def rank0_alone_makes_a_group():
    """review78d f14: rank 0 makes new_group([0, 1]); every rank then calls the default group's barrier."""
    import torch.distributed as dist

    if dist.get_rank() == 0:
        dist.new_group([0, 1])  # RANK 0 ONLY
    dist.barrier()


@pytest.mark.timeout(180)
def test_a_new_group_met_by_a_barrier_is_not_told_as_collectives_that_pair_by_position():
    run = bl.run(rank0_alone_makes_a_group, 3, timeout=2, deadline=5, live=False)
    d = run.diagnosis
    text = str(d)
    # M1, D2: new_group is no collective of the default group: nothing pairs; the ledger has no call of rank 0
    assert d.headline.startswith("A group made by only some ranks while the others called a collective"), text
    assert "rank 0's new_group #1 at " in d.headline and "ranks 1 and 2's barrier #1 at " in d.headline, text
    assert "does not pair with one" in d.headline and "takes no place in the group's sequence" in d.headline, text
    assert "rank 0 waited in new_group for rank 1 to join the group" in d.headline, text
    assert "ranks 1 and 2 waited in barrier #1 for rank 0" in d.headline, text
    assert "Different collectives at the same position" not in text and "pair by their position" not in text, text
    assert "rank 0 called new_group #1 (the group of ranks [0, 1]) at " in text, text
    assert d.advice.startswith("Every rank must make every group, in the same order, members or not"), text
    assert "`g = dist.new_group([0, 1])`" in d.advice, text
    assert run.ledger().splitlines()[1].startswith("1  —  "), run.ledger()


def members_disagree_on_their_subgroup():
    """review78d f53: the pair's members make different collectives on it; ranks 2 and 3 only make the group."""
    import torch
    import torch.distributed as dist

    g = dist.new_group([0, 1])
    if dist.get_rank() == 0:
        dist.barrier(group=g)
    elif dist.get_rank() == 1:
        dist.all_reduce(torch.ones(1), group=g)


@pytest.mark.timeout(180)
def test_the_summary_blames_no_non_member_for_a_call_of_a_subgroup():
    run = bl.run(members_disagree_on_their_subgroup, 4, timeout=2, deadline=4, live=False)
    summary = run.summary()
    # C3: "rank 3 never arrived at all_reduce #2: the others waited for it" (the subgroup's call #1, after the
    # new_group; ranks 2 and 3 are no members)
    assert "never arrived" not in summary and "#2" not in summary, summary
    assert "rank 2" not in summary and "rank 3" not in summary, summary
    assert "call #1 on the group of ranks [0, 1]" in run.diagnosis.headline, run.diagnosis


def order_swapped():
    """review78d f25 under TORCH_DISTRIBUTED_DEBUG=DETAIL: its check of each collective fails before the call
    reaches the group, so torch's flight recorder lists none of the learner's calls."""
    import torch
    import torch.distributed as dist

    t = torch.ones(1)
    if dist.get_rank() == 0:
        dist.all_reduce(t)
    else:
        dist.barrier()


@pytest.mark.timeout(180)
def test_the_ledger_of_a_detail_run_shows_the_calls_its_check_refused():
    run = bl.run(order_swapped, 2, timeout=4, live=False, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    ledger = run.ledger()
    # D3: "no collective calls were recorded" beside a diagnosis naming both ranks' call #1
    assert "no collective calls" not in ledger, ledger
    row = ledger.splitlines()[1]
    assert row.startswith("1  all_reduce @ line") and "(failed)" in row and "barrier @ line" in row, ledger
    assert "has no entry there: barrierlab's record places it after the rank's last listed call" in ledger, ledger
    assert "call #1" in run.diagnosis.headline, run.diagnosis


def rank0_barriers_while_the_others_reduce_gradients():
    """review78d D4 (the capstone's bug, small): rank 0 calls barrier where ranks 1 and 2 are in DDP's gradient
    all_reduce, which torch issues itself."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(torch.nn.Linear(2, 1))
    if dist.get_rank() == 0:
        dist.barrier()
    else:
        model(torch.ones(1, 2)).sum().backward()  # THE BACKWARD


@pytest.mark.timeout(180)
def test_the_ledger_marks_a_collective_torch_issued_that_failed():
    run = bl.run(rank0_barriers_while_the_others_reduce_gradients, 3, timeout=2, deadline=8, live=False)
    lines, first = inspect.getsourcelines(rank0_barriers_while_the_others_reduce_gradients)
    backward = first + next(i for i, line in enumerate(lines) if "THE BACKWARD" in line)
    raised = [r.rank for r in run.ranks if r.status == "raised"]
    assert 1 in raised and 2 in raised, run
    ledger = run.ledger()
    rows = [line for line in ledger.splitlines() if f"gradient all_reduce @ line {backward}" in line]
    assert rows, ledger
    # D4: ranks 1 and 2 raised in it, and the row showed their all_reduce as if it had completed
    assert rows[-1].count(f"gradient all_reduce @ line {backward} (failed)") == 2, ledger


def only_rank_0_reaches_a_barrier_after_two_new_groups():
    import torch.distributed as dist

    dist.new_group([0, 1])
    dist.new_group([0, 1])
    if dist.get_rank() == 0:
        dist.barrier()


@pytest.mark.timeout(120)
def test_a_ranks_count_of_collective_calls_leaves_its_new_group_calls_apart():
    """diag78b left "it returned from the function after 2 collective calls" for a rank whose only calls were two
    new_group (no collective on the default group in torch 2.13): the count says so."""
    run = bl.run(only_rank_0_reaches_a_barrier_after_two_new_groups, 2, timeout=3, live=False)
    text = str(run.diagnosis)
    assert "after 0 collective calls and 2 new_group calls" in text, text
    assert "after 2 collective calls" not in text, text
