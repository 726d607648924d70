"""A rank's events file removed or replaced by another process while the rank ran (attack28 a12, review56 C1): its
calls are unknown, not none, and every view of the run still works."""

from __future__ import annotations

import os

import torch.distributed as dist

import barrierlab as bl
from barrierlab import record


def another_rank_removes_rank0s_record(mode: str, skip_last: bool) -> int:
    """Modelled on review56's lost.py: rank 1 removes (or replaces) rank 0's events file between two barriers; with
    ``skip_last``, rank 0 then makes one more barrier that rank 1 skips (so rank 0 fails)."""
    mine = record._recorder.path
    paths = [None] * dist.get_world_size()
    dist.all_gather_object(paths, mine)
    if dist.get_rank() == 1:
        if mode == "replace":
            os.rename(paths[0], paths[0] + ".old")
            open(paths[0], "w").close()
        else:
            os.remove(paths[0])
    dist.barrier()
    if skip_last and dist.get_rank() == 0:
        dist.barrier()
    return dist.get_rank()


def test_a_removed_record_is_said_and_its_rank_is_not_told_as_one_that_made_no_call():
    for mode, lost in (("remove", "removed"), ("replace", "replaced by another file")):
        run = bl.run(another_rank_removes_rank0s_record, 2, args=(mode, False), timeout=3, deadline=15)
        assert run.ok, run
        assert run[0].events_lost == lost and run[1].events_lost == "", (run[0].events_lost, run[1].events_lost)
        text = str(run.diagnosis)
        assert "rank 0 never" not in text, text
        assert f"rank 0's events file was {lost} while it ran" in text, text


def test_a_failed_rank_whose_record_was_removed_is_diagnosed_without_an_error():
    """review56 C1: run.diagnosis raised KeyError when the rank whose record was lost was the one that failed."""
    run = bl.run(another_rank_removes_rank0s_record, 2, args=("remove", True), timeout=2, deadline=15)
    assert run.statuses[1] == "finished" and run.statuses[0] != "finished", run
    diagnosis = run.diagnosis
    assert "rank 0's events file was lost" in diagnosis.headline, diagnosis
    assert any("what it called is not known" in line for line in diagnosis.evidence), diagnosis
    assert run.ledger() and run.timeline() is not None and run.waits() is not None
