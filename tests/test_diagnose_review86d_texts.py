"""Texts review86d found wrong or misleading, on real runs: a ``work.wait(timeout=…)`` that gave up told as a
collective that failed and "ordered nothing" (C1); ``--races`` printing a negative count of ordered file handoffs
(C2); and a finished run whose barriers paired calls from different lines (an extra barrier on rank 0 evened out
by one more on the others, notebook 03's ``extra_barrier_evened_out``) diagnosed with no word of it (M1)."""

from __future__ import annotations

import pytest

import barrierlab as bl
from barrierlab import ordering


def wait_gives_up_then_waits_again():
    """review86d a1: rank 0 comes 1.5 s late; the others' wait(timeout=0.3 s) gives up, they wait again."""
    import datetime
    import time

    import torch
    import torch.distributed as dist

    if dist.get_rank() == 0:
        time.sleep(1.5)
    t = torch.ones(1)
    work = dist.all_reduce(t, async_op=True)
    try:
        work.wait(timeout=datetime.timedelta(seconds=0.3))
        first = "waited"
    except RuntimeError:
        first = "gave up"
    work.wait()
    return first, t.item()


@pytest.mark.timeout(120)
def test_a_wait_that_gave_up_then_waited_again_is_no_failed_collective():
    run = bl.run(wait_gives_up_then_waits_again, 3, timeout=10, linger=True)
    assert run.statuses == ["finished"] * 3, run
    assert [v[1] for v in run.values] == [3.0] * 3 and [v[0] for v in run.values][1:] == ["gave up"] * 2, run
    d = run.diagnosis
    text = str(d)
    assert d.ok, text
    assert "failed" not in text and "ordered nothing" not in text and "cannot be trusted" not in text, text
    assert "work.wait(timeout=" in d.headline and "gave up" in d.headline, text
    assert "stops only the waiting, not the all_reduce" in d.headline, text
    assert any(
        line.startswith("ranks 1 and 2's work.wait(timeout=) of all_reduce #1")
        and "Operation timed out!" in line
        and "their next wait of it" in line
        for line in d.evidence
    ), text


def wait_gives_up_and_goes_on():
    """review86d scen2 53: the others' wait(timeout=0.3 s) gives up and they return without waiting again; rank
    0's all_reduce then fails on their closed connections."""
    import datetime
    import time

    import torch
    import torch.distributed as dist

    if dist.get_rank() == 0:
        time.sleep(1.5)
    work = dist.all_reduce(torch.ones(1), async_op=True)
    try:
        work.wait(timeout=datetime.timedelta(seconds=0.3))
        return "waited"
    except RuntimeError as error:
        return str(error)[:40]


@pytest.mark.timeout(120)
def test_a_wait_that_gave_up_for_good_is_told_apart_from_the_collective_that_failed():
    run = bl.run(wait_gives_up_and_goes_on, 3, timeout=10)
    assert run.statuses == ["finished"] * 3, run
    d = run.diagnosis
    text = str(d)
    assert d.kind == "caught-errors", text
    # the others' waits gave up: not "all_reduce #1 on ranks 0–2 failed"
    assert "ranks 1 and 2 gave up waiting for all_reduce #1" in d.headline, text
    assert "never waited for it again" in d.headline, text
    assert "a collective call failed (all_reduce #1 on rank 0)" in d.headline, text
    assert not any(line.startswith("ranks 1 and 2's all_reduce #1") and "raised" in line for line in d.evidence), text
    assert any(
        line.startswith("ranks 1 and 2's work.wait(timeout=) of all_reduce #1") and "never waited for it again" in line
        for line in d.evidence
    ), text
    assert "Wait for it again" in d.advice, text


def rank_0_writes_while_the_others_look(folder):
    """review86d C2 (scen 16): rank 0 writes a file late; the others look for it, nothing ordering them."""
    import os
    import time

    import torch.distributed as dist

    path = os.path.join(folder, "data.txt")
    if dist.get_rank() == 0:
        time.sleep(0.3)
        with open(path, "w") as f:
            f.write("hello")
    found = os.path.exists(path)
    dist.barrier()
    return found


@pytest.mark.timeout(120)
def test_looks_that_raced_are_not_taken_off_the_ordered_handoffs(tmp_path):
    run = bl.run(rank_0_writes_while_the_others_look, 3, args=(str(tmp_path),), timeout=10)
    assert run.statuses == ["finished"] * 3, run
    order = ordering.order(run)
    assert len(order.races()) == 2, order.races()
    assert order.handoff_count() == len(order.handoffs()) == 0
    from barrierlab.__main__ import races_text

    assert "File handoffs the run's calls ordered (a change of a file before another rank's use of it): 0" in (
        races_text(run, run.races())
    )


def handoff_after_a_barrier(folder):
    import os

    import torch.distributed as dist

    path = os.path.join(folder, "data.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("hello")
    dist.barrier()
    with open(path) as f:
        return f.read()


@pytest.mark.timeout(120)
def test_ordered_handoffs_are_counted_as_listed(tmp_path):
    run = bl.run(handoff_after_a_barrier, 3, args=(str(tmp_path),), timeout=10)
    order = ordering.order(run)
    assert order.handoff_count() == len(order.handoffs()) == 2 and not order.races()


def extra_barrier_evened_out(steps=3):
    """Notebook 03's extra_barrier_evened_out (cell e7a1c3d5): rank 0's extra barrier, evened out later."""
    import time

    import torch.distributed as dist

    rank = dist.get_rank()
    if rank == 0:
        dist.barrier()  # the extra barrier
    for _ in range(steps):
        time.sleep(0.05)  # a training step
        dist.barrier()  # end of the step
    if rank != 0:
        dist.barrier()  # the others: one more barrier later, "before saving"
    return steps


@pytest.mark.timeout(120)
def test_a_finished_run_names_the_calls_that_paired_across_different_lines():
    run = bl.run(extra_barrier_evened_out, 3, timeout=10)
    assert run.statuses == ["finished"] * 3, run
    d = run.diagnosis
    text = str(d)
    assert d.ok, text  # the rule stands: calls from different lines that pair and never diverge finish
    assert "Barrier #1 and barrier #4 paired calls made from different lines on different ranks" in d.headline, text
    assert "pair by their position in the group's sequence, not by their line" in d.headline, text
    assert any(line.startswith("call #1 (barrier) came from different lines") for line in d.evidence), text
    assert any(line.startswith("call #4 (barrier) came from different lines") for line in d.evidence), text


def main_process_first():
    """The pattern the rule keeps: rank 0 works first, the others wait at another line."""
    import torch.distributed as dist

    if dist.get_rank() != 0:
        dist.barrier()  # the others wait for rank 0
    if dist.get_rank() == 0:
        dist.barrier()  # rank 0 is done: it releases them
    return "ok"


@pytest.mark.timeout(120)
def test_main_process_first_stays_ok_and_is_told_as_pairing_by_position():
    run = bl.run(main_process_first, 3, timeout=10)
    d = run.diagnosis
    assert d.ok, d
    assert "Barrier #1 paired calls made from different lines" in d.headline, d
    assert "main_process_first" in d.headline, d
