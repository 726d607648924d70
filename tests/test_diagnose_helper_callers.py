"""One helper's collective line reached from different call sites is two places, for pairing and for loops
(corpus34's autocast item, alan-turing-institute/autocast PR #386: Lightning's `trainer.save_checkpoint()` ends in
`strategy.barrier()`, and it was called under `if trainer.is_global_zero:`; rank 0's save barrier paired with the
other rank's finalize barrier, and the diagnosis said "a loop ran a different number of times")."""

from __future__ import annotations

import pytest

import barrierlab as bl


def strategy_barrier():
    import torch.distributed as dist

    dist.barrier()


def save_checkpoint():
    strategy_barrier()


def finalize():
    strategy_barrier()


def run_training():
    import torch.distributed as dist

    strategy_barrier()  # every rank, once
    if dist.get_rank() == 0:
        save_checkpoint()  # the bug: only rank 0 saves, and saving ends in a barrier
    finalize()


@pytest.mark.timeout(120)
def test_a_helper_reached_from_two_call_sites_pairs_two_different_calls():
    run = bl.run(run_training, 2, timeout=5)
    headline = run.diagnosis.headline
    save_line = run_training.__code__.co_firstlineno + 5
    finalize_line = save_line + 1
    assert headline.startswith("A collective was silently paired with a different call"), headline
    assert "started at call #2" in headline
    assert f"(from tests/test_diagnose_helper_callers.py:{save_line})" in headline, headline
    assert f"(from tests/test_diagnose_helper_callers.py:{finalize_line})" in headline, headline
    assert "loop" not in headline


def late_rank_meets_an_unwaited_barrier():
    import time

    import torch
    import torch.distributed as dist

    if dist.get_rank() == 1:
        time.sleep(3)  # past the others' 1 s timeout
        dist.barrier()
        return
    dist.barrier(async_op=True)  # never waited for
    time.sleep(2)
    dist.all_reduce(torch.ones(2))


@pytest.mark.timeout(120)
def test_calls_that_did_not_complete_on_every_rank_are_not_called_paired():
    """review59b C1: a rank arriving after the others' timeout at a barrier they made unwaited from another line was
    told "silently paired … the ranks passed it together"; the late rank failed inside it."""
    run = bl.run(late_rank_meets_an_unwaited_barrier, 3, timeout=1, deadline=15)
    text = str(run.diagnosis)
    assert "silently paired" not in text and "passed it together" not in text, text
