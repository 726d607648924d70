"""A rank that reaches a collective torch issues (DDP's construction-time checks) after the others' timeout ran
out there (round 23 of the real-world corpus, written by someone who had not read the tools: rank 0's 7 s
download before ``DDP(model)`` under a 4 s group timeout). No call of the learner's differs, so the headline
was blind ("every rank made the same collective calls"); torch's flight record says when each rank issued it."""

from __future__ import annotations

import pytest

import barrierlab as bl

pytestmark = [pytest.mark.usefixtures("no_leftovers")]


def slow_download_before_ddp(seconds):
    import time

    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = nn.Linear(4, 2)
    if dist.get_rank() == 0:
        time.sleep(seconds)  # a download of pretrained weights, on rank 0 only
    DDP(model)
    return None


def test_a_rank_late_to_ddps_first_collective_past_the_timeout_is_named_with_its_line():
    run = bl.run(slow_download_before_ddp, 2, args=(4.0,), timeout=1.5, deadline=40)
    d = run.diagnosis
    assert not run.ok
    assert d.kind == "late-arrival", d
    assert d.headline.startswith("rank 0 reached all_gather"), d.headline
    assert "test_diagnose_late_torch_call.py:" in d.headline and "DDP(model)" in d.headline, d.headline
    assert "1.5 s timeout ran out first" in d.headline, d.headline
