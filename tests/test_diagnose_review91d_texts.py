"""Three texts review91d found misleading: an irecv never waited for, whose rank returned its unfilled buffer while
the sender failed on the closed connection, told as "rank 0 did not finish" with advice to read the victim's
traceback (M1); a broadcast_object_list against a plain broadcast told as "paired silently" where gloo aborted a
rank, with a rule that predicted no error for this direction (M2); a size mismatch whose error one rank's own
try/except swallowed, and whose other rank's call returned without error, neither said (M3)."""

from __future__ import annotations

import inspect

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


def plain_broadcast_on_the_root_against_an_object_list(elements):
    """Rank 0 broadcasts a plain tensor of ``elements`` float32s first (LibreYOLO#594: DDP's buffer broadcast on
    rank 0 only), then both ranks broadcast_object_list: rank 1's size tensor (8 bytes) receives rank 0's tensor."""
    import torch
    import torch.distributed as dist

    if dist.get_rank() == 0:
        dist.broadcast(torch.zeros(elements), src=0)
        results = [{"map": 0.5}]
    else:
        results = [None]
    dist.broadcast_object_list(results, src=0)
    return results[0]


@pytest.mark.timeout(120)
def test_a_plain_broadcast_on_the_root_aborts_the_object_list_receiver_and_is_not_told_as_silent():
    run = bl.run(plain_broadcast_on_the_root_against_an_object_list, 2, args=(3,), timeout=3, deadline=20)
    assert run[1].status == "killed by signal", run
    diagnosis = run.diagnosis
    assert diagnosis.kind == "silently-paired", diagnosis
    headline = diagnosis.headline
    assert headline.startswith("Different calls paired at call #1: ") and "silently" not in headline, diagnosis
    assert "gloo aborted rank 1 (SIGABRT) in its broadcast_object_list" in headline, diagnosis
    assert "which received 12 bytes where it had room for 8" in headline, diagnosis
    advice = diagnosis.advice
    assert "a broadcast_object_list's size tensor receives a plain broadcast's data" in advice, advice
    assert "gloo aborts the receiving process when the root sends more bytes than that tensor holds" in advice
    assert "with no error when its tensor holds at least those bytes" not in advice, advice


def object_list_on_the_root_against_a_plain_broadcast():
    """review91d x08: the other direction: rank 1's plain 16-byte tensor receives the 8-byte size with no error."""
    import torch
    import torch.distributed as dist

    if dist.get_rank() == 0:
        dist.broadcast_object_list([{"a": 1}], src=0)
        return "root"
    buffer = torch.zeros(4)
    dist.broadcast(buffer, src=0)
    return buffer.tolist()


@pytest.mark.timeout(120)
def test_a_plain_receiver_with_room_returns_with_no_error_and_the_headline_says_so():
    run = bl.run(object_list_on_the_root_against_a_plain_broadcast, 2, timeout=3, deadline=20)
    assert run[1].status == "finished" and run[1].value[1:] == [0.0, 0.0, 0.0], run
    headline = run.diagnosis.headline
    assert headline.startswith("Different calls paired at call #1: ") and "silently" not in headline, headline
    assert "rank 1 returned from its call with no error" in headline, headline
    assert "gloo aborted" not in headline, headline


def size_mismatch_inside_its_own_try():
    """review91d r36: rank-dependent sizes; the function swallows the all_reduce's error and goes on to a barrier."""
    import torch
    import torch.distributed as dist

    t = torch.ones(2 + dist.get_rank())
    try:
        dist.all_reduce(t)
    except RuntimeError:  # the handler of the test
        pass
    dist.barrier()
    return t.tolist()


@pytest.mark.timeout(120)
def test_a_size_mismatch_whose_error_the_function_swallowed_says_so_and_that_the_other_call_returned():
    run = bl.run(size_mismatch_inside_its_own_try, 2, timeout=3, deadline=30)
    assert not run.ok, run
    at = {r.rank: [e for e in r.events if e.is_collective] for r in run}
    assert at[1][0].error and at[1][1].name == "barrier", run  # rank 1's all_reduce failed and it went on
    assert at[0][0].error is None and at[0][0].end is not None, run  # rank 0's returned without error
    diagnosis = run.diagnosis
    assert diagnosis.kind == "different-sizes", diagnosis
    line = inspect.getsourcelines(size_mismatch_inside_its_own_try)[1]
    handler = (
        line
        + [
            n
            for n, text in enumerate(inspect.getsourcelines(size_mismatch_inside_its_own_try)[0])
            if "the handler of the test" in text
        ][0]
    )
    headline = diagnosis.headline
    assert "Rank 1's error in it was swallowed by the function's own try/except (its except at " in headline
    assert f"test_diagnose_review91d_texts.py:{handler})" in headline, diagnosis
    assert "and it went on to barrier #2 at" in headline, diagnosis
    assert "Rank 0's call returned without error, with data that cannot be trusted" in headline, diagnosis
    assert any(e.startswith("rank 0's all_reduce #1 returned without error after") for e in diagnosis.evidence)
