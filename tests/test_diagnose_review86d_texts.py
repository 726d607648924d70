"""Texts review86d found wrong or misleading, on real runs: a ``work.wait(timeout=…)`` that gave up told as a
collective that failed and "ordered nothing" (C1); ``--races`` printing a negative count of ordered file handoffs
(C2); and a finished run whose barriers paired calls from different lines (an extra barrier on rank 0 evened out
by one more on the others, notebook 03's ``extra_barrier_evened_out``) diagnosed with no word of it (M1)."""

from __future__ import annotations

import pytest

import barrierlab as bl
from barrierlab import ordering


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
