"""Point-to-point pipelines that fail for a reason other than a cycle of waits (round 21 of the real-world corpus,
written by someone who had not read the tools): a recv whose tensor is smaller than the message (gloo aborts the
receiver; the sender then fails on the closed connection), and a recv on a subgroup whose timeout runs out before
its sender arrives. Both were reported as "A cycle of point-to-point waits", although each send had its matching
recv on the other rank."""

from __future__ import annotations

import pytest

import barrierlab as bl

pytestmark = [pytest.mark.usefixtures("no_leftovers")]


def shapes_from_the_first_batch(sizes):
    import torch
    import torch.distributed as dist

    if dist.get_rank() == 0:
        dist.send(torch.ones(sizes[0]), dst=1)  # a padded batch longer than the first one
        grad = torch.zeros(4)
        dist.recv(grad, src=1)
        return None
    buf = torch.zeros(sizes[1])  # allocated from the shape the first batch had
    dist.recv(buf, src=0)
    dist.send(torch.ones(4), dst=0)
    return None


def test_a_message_bigger_than_the_recv_tensor_is_named_not_a_cycle():
    run = bl.run(shapes_from_the_first_batch, 2, args=((256, 160),), timeout=10, deadline=40)
    d = run.diagnosis
    assert not run.ok
    assert d.headline.startswith("gloo aborted rank 1: in dist.recv()"), d.headline
    assert "1024 bytes where its tensors hold 640" in d.headline
    assert "the message sent to it was bigger than the tensor it received into" in d.headline
    assert "send the shape first" in d.advice


def late_sender_on_a_subgroup(compile_seconds, timeout):
    import datetime
    import time

    import torch
    import torch.distributed as dist

    pp = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=timeout))
    if dist.get_rank() == 0:
        time.sleep(compile_seconds)  # stage 0 still compiling
        dist.send(torch.ones(4), dst=1, group=pp)
    else:
        buf = torch.zeros(4)
        dist.recv(buf, src=0, group=pp)
    return None


def test_a_recv_whose_timeout_runs_out_before_its_sender_arrives_is_a_late_arrival():
    run = bl.run(late_sender_on_a_subgroup, 2, args=(3.0, 1.0), timeout=20, deadline=60)
    d = run.diagnosis
    assert not run.ok
    assert d.kind == "late-arrival", d
    assert d.headline.startswith("rank 0 reached send to rank 1 at "), d.headline
    assert "rank 1's 1 s timeout ran out first" in d.headline
    assert "new_group's for a subgroup" in d.advice


def object_list_longer_than_the_receivers():
    import torch.distributed as dist

    if dist.get_rank() == 0:
        dist.send_object_list([(4, 8), "padded"], dst=1)  # the metadata grew an entry on this batch
        return None
    meta = [None]  # sized for the first batch's metadata
    dist.recv_object_list(meta, src=0)
    return meta


def test_a_send_object_list_longer_than_the_receivers_list_names_both_calls():
    """Round 22 (ColossalAI-style pipeline metadata): send_object_list sends the list's sizes first, one per
    object, so a receiver whose list is shorter gets more bytes than it allocated and gloo aborts it; the
    diagnosis names the sender's call and says the lists must have one length."""
    run = bl.run(object_list_longer_than_the_receivers, 2, timeout=10, deadline=40)
    d = run.diagnosis
    assert not run.ok
    assert d.headline.startswith("gloo aborted rank 1: in dist.recv_object_list()"), d.headline
    assert "16 bytes where its tensors hold 8" in d.headline
    assert "rank 0's send_object_list at " in d.headline and "test_diagnose_p2p_pipelines.py:" in d.headline
    assert "same length" in d.advice


def pair_cycle_on_four_ranks():
    """review70b M6: other = 1 - rank; ranks 0 and 1 send to each other first (a cycle), ranks 2 and 3 send to
    ranks -1 and -2 and fail in the store."""
    import torch
    import torch.distributed as dist

    rank = dist.get_rank()
    t = torch.ones(4)
    other = 1 - rank
    dist.send(t, dst=other)
    dist.recv(t, src=other)


@pytest.mark.timeout(120)
def test_ranks_outside_a_p2p_cycle_are_accounted_for():
    run = bl.run(pair_cycle_on_four_ranks, 4, timeout=2)
    assert run.statuses[:2] == ["raised"] * 2, run
    d = run.diagnosis
    assert d.headline.startswith("A cycle of point-to-point waits: ranks 0 and 1 each wait in send"), d
    if run.statuses[2:] != ["raised"] * 2:
        # torch's send to a negative rank sometimes corrupts the heap of ranks 2 and 3 ("malloc(): invalid next
        # size", SIGABRT: seen twice in session 29, before any barrierlab code reads the run); they are still
        # accounted for, as killed
        assert "rank 2" in d.headline and "rank 3" in d.headline or "ranks 2 and 3" in d.headline, d
        return
    assert "Also, outside the cycle, rank 2 failed in send to rank -1 (no such rank" in d.headline, d
    assert "rank 3 failed in send to rank -2 (no such rank" in d.headline, d
    assert any(line.startswith("rank 2 raised DistStoreError") for line in d.evidence), d
    assert any(line.startswith("rank 3 raised DistStoreError") for line in d.evidence), d
