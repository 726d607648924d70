"""Three texts review91d found misleading: an irecv never waited for, whose rank returned its unfilled buffer while
the sender failed on the closed connection, told as "rank 0 did not finish" with advice to read the victim's
traceback (M1); a broadcast_object_list against a plain broadcast told as "paired silently" where gloo aborted a
rank, with a rule that predicted no error for this direction (M2); a size mismatch whose error one rank's own
try/except swallowed, and whose other rank's call returned without error, neither said (M3)."""

from __future__ import annotations

import pytest

import barrierlab as bl


def irecv_read_before_its_message():
    import time

    import torch
    import torch.distributed as dist

    if dist.get_rank() == 0:
        time.sleep(0.3)
        dist.send(torch.arange(4.0) + 1, dst=1)
        return "sent"
    buffer = torch.zeros(4)
    dist.irecv(buffer, src=0)
    return buffer.tolist()


@pytest.mark.timeout(120)
def test_an_unwaited_irecv_whose_rank_returned_is_the_bug_not_the_failing_sender():
    run = bl.run(irecv_read_before_its_message, 2, timeout=3)
    assert run.statuses == ["raised", "finished"], run
    assert run[1].value == [0.0, 0.0, 0.0, 0.0], run
    diagnosis = run.diagnosis
    assert diagnosis.kind == "irecv-never-waited", diagnosis
    headline = diagnosis.headline
    assert headline.startswith("rank 1's irecv from rank 0 at "), diagnosis
    assert "was never waited for, and rank 1 returned from the function before its message arrived" in headline
    assert "rank 0's send that pairs with it" in headline and "failed, after rank 1 had returned" in headline
    assert "rank 0's failure followed from it: its send is not the bug" in headline, diagnosis
    assert "rank 1 returned from the function at t=" in str(diagnosis) and "[0.0, 0.0, 0.0, 0.0]" in str(diagnosis)
    assert "work.wait()" in diagnosis.advice and "Read each failing rank's traceback" not in diagnosis.advice
    assert sum("was never waited for" in line for line in diagnosis.evidence) == 0, diagnosis  # said once
