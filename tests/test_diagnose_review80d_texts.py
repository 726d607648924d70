"""Texts review80d found wrong or misleading, each on a real run: a store wait for a key nothing sets told as a
wait cycle (C1), a rank 0 that was in the monitored barrier said never to have reached it (C2), one side's own
timeout told as "until the deadline stopped them" (C3), a run whose collectives failed and were caught told as
plain "finished" (M1), a gather's non-root ranks that left at once said to have waited (M2), the ranks of a script
said to have "returned from the function" (M3)."""

from __future__ import annotations

import inspect
import textwrap

import pytest

import barrierlab as bl
from barrierlab.script import run_script

DETAIL = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}


def waits_for_a_misspelt_key():
    """C1: rank 1 sets 'ready_a' before the barrier; rank 0 waits for 'ready_b', which no line sets."""
    from datetime import timedelta

    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()
    if dist.get_rank() == 1:
        store.set("ready_a", "1")  # SET
    if dist.get_rank() == 0:
        store.wait(["ready_b"], timedelta(seconds=1))
    dist.barrier()


def waits_for_a_key_set_after_the_barrier():
    from datetime import timedelta

    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()
    if dist.get_rank() == 0:
        store.wait(["ready"], timedelta(seconds=1))
    dist.barrier()
    if dist.get_rank() == 1:
        store.set("ready", "1")  # SET AFTER


def _line(fn, marker: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


@pytest.mark.timeout(120)
def test_a_wait_for_a_key_nothing_sets_is_no_wait_cycle():
    run = bl.run(waits_for_a_misspelt_key, 2, timeout=1.5, deadline=10)
    d = run.diagnosis
    assert d.kind == "store-wait-cycle", d
    assert "wait cycle" not in d.headline and "whatever sets the key comes after" not in d.headline, d
    assert "no rank set the key before that call, and the source shows no set of it after the call" in d.headline, d
    line = _line(waits_for_a_misspelt_key, "# SET")
    assert any(
        e.startswith("rank 1 set 'ready_a' at ") and f":{line}" in e and e.endswith("which no rank waited for")
        for e in d.evidence
    ), d
    assert "under the very name waited for" in d.advice, d


@pytest.mark.timeout(120)
def test_a_wait_for_a_key_the_source_sets_after_the_barrier_is_a_wait_cycle_with_its_line():
    run = bl.run(waits_for_a_key_set_after_the_barrier, 2, timeout=1.5, deadline=10)
    d = run.diagnosis
    line = _line(waits_for_a_key_set_after_the_barrier, "# SET AFTER")
    assert d.headline.startswith("A wait cycle through the store"), d
    assert f"the source sets the key only after that call (line {line})" in d.headline, d
    assert f"the source sets 'ready' at line {line}, after that call" in d.evidence, d


def monitored_barrier_with_a_sleeping_rank():
    """C2: rank 2 sleeps; rank 0 waits in the monitored barrier (torch's default timeout, 30 min), ranks 0-1 for
    rank 0's answer (the group's timeout)."""
    import time

    import torch.distributed as dist

    if dist.get_rank() != 2:
        dist.monitored_barrier()
    else:
        time.sleep(10)


@pytest.mark.timeout(120)
def test_a_rank_0_still_in_the_monitored_barrier_is_not_said_never_to_have_reached_it():
    run = bl.run(monitored_barrier_with_a_sleeping_rank, 3, timeout=1.5, deadline=6, linger=True)
    text = str(run.diagnosis)
    assert run.statuses[:2] == ["stopped at deadline", "raised"], run
    assert "never reached the monitored barrier itself" not in text, text
    assert "rank 0 was in the monitored barrier too, still waiting for a rank that had not arrived" in text, text


def detail_all_reduce_two_skip():
    """C2's second case: under DETAIL rank 0's check fails, and rank 0 catches it and returns."""
    import time

    import torch
    import torch.distributed as dist

    if dist.get_rank() < 2:
        try:
            dist.all_reduce(torch.ones(2))
        except RuntimeError as error:
            return str(error)
    time.sleep(3)


@pytest.mark.timeout(120)
def test_a_rank_0_that_caught_its_monitored_barrier_error_gave_up_on_the_others():
    run = bl.run(detail_all_reduce_two_skip, 4, timeout=1.5, deadline=15, env=DETAIL)
    text = str(run.diagnosis)
    assert "never reached the monitored barrier itself" not in text, text
    if "successfully reached monitoredBarrier" in str(run[1].value):
        assert "rank 0 gave up on the ranks that never came" in text, text


def barrier_of_a_subgroup_against_the_default_group():
    """C3: rank 0 waits in a subgroup (new_group's timeout: torch's 30 min), rank 1 in the default group (1.5 s)."""
    import torch.distributed as dist

    group = dist.new_group([0, 1])
    if dist.get_rank() == 0:
        dist.barrier(group=group)
    else:
        dist.barrier()


@pytest.mark.timeout(120)
def test_one_sides_timeout_is_not_told_as_the_deadline_stopping_both():
    run = bl.run(barrier_of_a_subgroup_against_the_default_group, 2, timeout=1.5, deadline=6, linger=True)
    d = run.diagnosis
    assert run.statuses == ["stopped at deadline", "raised"], run
    assert d.kind == "different-groups", d
    assert "until the deadline stopped them" not in d.headline, d
    assert d.headline.endswith(
        "until rank 1 gave up when its 1.5 s timeout ran out (rank 0 was still waiting in its call: stopped at "
        "the deadline)."
    ), d


def late_rank_and_swallowed_timeout():
    """M1: rank 1 comes after the timeout; every rank's except swallows the barrier's error."""
    import time

    import torch.distributed as dist

    try:
        if dist.get_rank() == 1:
            time.sleep(2.0)
        dist.barrier()
    except RuntimeError:
        pass
    return "done"


@pytest.mark.timeout(120)
def test_collectives_that_failed_and_were_caught_are_said_on_a_finished_run():
    run = bl.run(late_rank_and_swallowed_timeout, 2, timeout=1, deadline=10)
    d = run.diagnosis
    assert run.statuses == ["finished", "finished"], run
    assert d.kind == "caught-errors" and not d.ok, d
    assert "But a collective call failed (barrier #1 on ranks 0 and 1)" in d.headline, d
    assert "caught the error and went on: a failed collective ordered nothing" in d.headline, d
    assert any("barrier #1" in e and "which was caught" in e for e in d.evidence), d
    assert "`except`" in d.advice, d


def gather_with_a_rank_naming_itself_the_root():
    """M2: rank 1 names itself the root without a gather_list and raises; rank 2 sends to rank 0 and leaves."""
    import torch
    import torch.distributed as dist

    rank, t = dist.get_rank(), torch.ones(1)
    if rank == 0:
        dist.gather(t, [torch.zeros(1) for _ in range(3)], dst=0)
    elif rank == 1:
        dist.gather(t, dst=1)
    else:
        dist.gather(t, dst=0)


@pytest.mark.timeout(120)
def test_a_gathers_non_root_rank_that_left_is_not_said_to_have_waited():
    run = bl.run(gather_with_a_rank_naming_itself_the_root, 3, timeout=1.5, deadline=10, linger=True)
    d = run.diagnosis
    assert run.statuses == ["raised", "raised", "finished"], run
    assert "so rank 0 waited in gather #1 (rank 2 left it, needing nothing from rank 1)" in d.headline, d
    assert "ranks 0 and 2 waited" not in d.headline, d


@pytest.mark.timeout(120)
def test_the_ranks_of_a_script_ran_it_to_its_end(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """\
            import os
            import torch.distributed as dist
            dist.init_process_group("gloo")
            if int(os.environ["RANK"]) == 0:
                dist.barrier()
            dist.destroy_process_group()
            """
        )
    )
    run = run_script(script, 3, timeout=2, deadline=15)
    text = str(run.diagnosis)
    assert run.statuses[1:] == ["finished", "finished"], run
    assert "ranks 1 and 2 never made a 1st collective call: they ran the script to its end" in text, text
    assert "returned from the function" not in text, text
