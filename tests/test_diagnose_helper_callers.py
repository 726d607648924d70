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
