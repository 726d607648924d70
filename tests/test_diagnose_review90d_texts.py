"""Three texts review90d found misleading: a subgroup collective some members skipped, its waiting members'
end and the subgroup's own timeout unsaid (M1); a script's rank that exited "before returning from the function"
(M2); two all_reduce calls swapped on some ranks, the second told as the harmless kind of pairing (M3)."""

from __future__ import annotations

import pytest

import barrierlab as bl
from barrierlab.script import run_script


def subgroup_barrier_skipped_by_one_member():
    import torch.distributed as dist

    group = dist.new_group([0, 1, 2])
    if dist.get_rank() in (0, 1):
        dist.barrier(group=group)


@pytest.mark.timeout(120)
def test_members_left_in_a_skipped_subgroup_call_were_stopped_at_the_deadline_not_by_the_run_timeout():
    run = bl.run(subgroup_barrier_skipped_by_one_member, 4, timeout=2, linger=True)
    assert run.statuses[:2] == ["stopped at deadline"] * 2, run
    diagnosis = run.diagnosis
    assert "rank 2, in that group too, never did" in diagnosis.headline, diagnosis
    assert "until the run's deadline stopped them" in diagnosis.headline, diagnosis
    assert "the run's timeout is the default group's, not this subgroup's" in diagnosis.headline, diagnosis
    text = str(diagnosis)
    assert "ranks 0 and 1 were stopped by the run's deadline" in text, text
    assert "30 minutes here" in text and "the run's timeout (2 s) is the default group's" in text, text
    assert "timeout= given to new_group" in diagnosis.advice, diagnosis


@pytest.mark.timeout(120)
def test_a_script_rank_that_exits_is_said_to_exit_before_the_script_ended(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\n"
        "import torch\n"
        "import torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "if dist.get_rank() == 1:\n"
        "    sys.exit(3)\n"
        "dist.all_reduce(torch.ones(1))\n"
    )
    run = run_script(script, 3, timeout=2, deadline=15)
    line = run[1].summary()
    assert line == "rank 1: exited with code 3 before the script ended", line
    assert "the function" not in str(run) + str(run.diagnosis), (run, run.diagnosis)


def two_all_reduces_swapped_on_some_ranks():
    import torch
    import torch.distributed as dist

    a, b = torch.ones(1), torch.full((1,), 100.0)
    if dist.get_rank() == 0:
        dist.all_reduce(a)
        dist.all_reduce(b)
    else:
        dist.all_reduce(b)
        dist.all_reduce(a)
    return a.item(), b.item()


@pytest.mark.timeout(120)
def test_two_swapped_all_reduces_both_combined_the_wrong_tensors():
    run = bl.run(two_all_reduces_swapped_on_some_ranks, 4, timeout=5)
    assert run.values == [(301.0, 103.0)] + [(103.0, 301.0)] * 3, run
    diagnosis = run.diagnosis
    headline = diagnosis.headline
    assert "made all_reduce #1 and #2 from the same two lines in opposite orders" in headline, diagnosis
    assert "both calls combined the wrong tensors on every rank" in headline, diagnosis
    assert "main_process_first" not in headline and "evened out" not in headline, diagnosis
    assert diagnosis.evidence[0].startswith("call #1 (all_reduce)"), diagnosis
    assert diagnosis.evidence[1].startswith("call #2 (all_reduce)"), diagnosis
