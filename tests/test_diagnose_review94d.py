"""review94d F1-F6: the diagnoses of six program shapes the reviewer ran, each told at its cause.

F1: a ring whose send and receive peers are the same rank is no cycle of waits (unmatched peers); a ring that
receives first from the previous rank still is one. F2: a ``new_group`` takes no number among the default group's
calls. F3: a mismatch inside a subgroup is told before the default-group call the mismatched ranks never reached.
F4: a send with no receive, the peer having received fewer times, is told as a difference of counts, not of peers.
F5: the advice about TORCH_DISTRIBUTED_DEBUG=DETAIL says when its check applies and whether it reported these calls.
F6: the SIGKILL advice does not say where the signal came from, which the record does not show."""

from __future__ import annotations

import datetime
import os
import re
import signal

import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab.scenarios import load

TIMEOUT = 3


def ring_sends_and_receives_next():
    """p11: each rank sends to rank + 1 and receives from rank + 1, so no rank ever sends to rank r from r + 1."""
    r, n = dist.get_rank(), dist.get_world_size()
    peer = (r + 1) % n
    t = torch.zeros(2)
    req = dist.isend(torch.ones(2) * r, dst=peer)
    dist.recv(t, src=peer)
    req.wait()
    return t.tolist()


def ring_even_odd_same_peer():
    """f11a: p11 with the old advice applied (even ranks send first): the peers still do not match."""
    r, n = dist.get_rank(), dist.get_world_size()
    peer = (r + 1) % n
    t = torch.zeros(2)
    if r % 2 == 0:
        dist.send(torch.ones(2) * r, dst=peer)
        dist.recv(t, src=peer)
    else:
        dist.recv(t, src=peer)
        dist.send(torch.ones(2) * r, dst=peer)
    return t.tolist()


def ring_receives_first():
    """p10: a real cycle: every rank receives from rank - 1 before it sends to rank + 1."""
    r, n = dist.get_rank(), dist.get_world_size()
    t = torch.zeros(2)
    dist.recv(t, src=(r - 1) % n)
    dist.send(torch.ones(2) * r, dst=(r + 1) % n)
    return t.tolist()


def barrier_on_two_groups():
    """p17: rank 0 waits in the new group's barrier, rank 1 in the default group's first."""
    r = dist.get_rank()
    g = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=TIMEOUT))
    if r == 0:
        dist.barrier(group=g)
    else:
        dist.barrier()
    return r


def subgroup_mismatch_then_barrier():
    """q30: ranks 2 and 3 call different ops on their subgroup, then every rank calls the default barrier."""
    r = dist.get_rank()
    g = dist.new_group([2, 3], timeout=datetime.timedelta(seconds=TIMEOUT))
    if r == 2:
        dist.barrier(group=g)
    elif r == 3:
        dist.all_reduce(torch.ones(2), group=g)
    dist.barrier()
    return r


def send_twice_receive_once():
    """q29: the peers are right; rank 0 sends twice and rank 1 receives once."""
    t = torch.zeros(2)
    if dist.get_rank() == 0:
        dist.send(torch.ones(2), dst=1)
        dist.send(torch.ones(2) * 2, dst=1)
    else:
        dist.recv(t, src=0)
    return t.tolist()


def kills_itself():
    """q46: rank 2 sends SIGKILL to its own process between two collectives."""
    r = dist.get_rank()
    dist.barrier()
    if r == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(torch.ones(2))
    return r


def test_f1_a_ring_whose_peers_do_not_match_is_no_cycle():
    run = bl.run(ring_sends_and_receives_next, 3, timeout=TIMEOUT, deadline=60)
    d = run.diagnosis
    assert d.kind == "unmatched-p2p", d
    assert "cycle" not in d.headline, d
    assert "has no receive from rank 0 on rank 1, which sends to rank 2 and receives from rank 2" in d.headline, d
    assert "Check how each rank computes its peers" in d.advice, d
    assert "Break the cycle" not in d.advice, d


def test_f1_the_even_odd_order_of_unmatched_peers_is_no_cycle_either():
    run = bl.run(ring_even_odd_same_peer, 3, timeout=TIMEOUT, deadline=60)
    d = run.diagnosis
    assert d.kind == "unmatched-p2p", d
    assert "rank 0's send to rank 1" in d.headline and "on rank 1, which receives from rank 2" in d.headline, d
    assert "Break the cycle" not in d.advice, d


def test_f1_a_ring_that_receives_first_is_still_a_cycle():
    run = bl.run(ring_receives_first, 3, timeout=TIMEOUT, deadline=60)
    d = run.diagnosis
    assert d.kind == "p2p-cycle", d
    assert "each wait in recv from the previous rank" in d.headline, d
    assert "Break the cycle" in d.advice, d


def test_f2_new_group_takes_no_number_among_the_default_groups_calls():
    run = bl.run(barrier_on_two_groups, 2, timeout=TIMEOUT, deadline=60)
    d = run.diagnosis
    assert d.kind == "different-groups", d
    assert "rank 1 in barrier #1 of the default group" in d.headline, d
    assert "#2" not in d.headline, d
    assert any("had not entered its 1st call of the default group" in line for line in d.evidence), d
    assert re.search(r"(?m)^1 +— +barrier @ line \d+ \(failed\)", run.ledger()), run.ledger()


def test_f3_a_subgroup_mismatch_is_told_before_the_barrier_it_kept_ranks_from():
    run = bl.run(subgroup_mismatch_then_barrier, 4, timeout=TIMEOUT, deadline=60)
    d = run.diagnosis
    assert d.kind == "mismatched-collectives", d
    assert d.headline.startswith(
        "Different collectives at the same position of a subgroup: call #1 on the group of ranks [2, 3] is rank "
        "2's barrier"
    ), d
    assert "reached by only some ranks" not in d.headline, d
    assert any(
        "ranks 0 and 1 called barrier #1" in line
        and "which ranks 2 and 3 never reached: they were left waiting" in line
        for line in d.evidence
    ), d
    assert "rank-dependent `if`" not in d.advice, d
    assert "Ranks 0 and 1 waited in barrier #1 of the default group only for ranks 2 and 3" in d.advice, d


def test_f4_more_sends_than_receives_is_told_as_a_difference_of_counts():
    run = bl.run(send_twice_receive_once, 2, timeout=TIMEOUT, deadline=60)
    d = run.diagnosis
    assert d.kind == "unmatched-p2p", d
    assert "rank 0's 2nd send to rank 1" in d.headline, d
    assert "has no receive: rank 1 made only 1 receive from rank 0" in d.headline, d
    assert "which receives from rank 0" not in d.headline, d
    assert "computes its peers" not in d.advice, d
    assert "make the sender and the receiver make the same number of calls" in d.advice, d


def test_f5_detail_advice_says_when_its_check_applies_and_that_it_did_not_report_here():
    run = bl.run(load("debug_level_too_late"), 2, timeout=TIMEOUT, deadline=60)
    assert run[0].value["levels"][-1] == "DebugLevel.DETAIL", run.values
    d = run.diagnosis
    assert d.kind == "mismatched-collectives", d
    assert "reports such a mismatch at once while you develop" not in d.advice, d
    assert "but only on groups made after torch has read it" in d.advice, d  # review95d U1: read, not set
    assert "in this run no rank's call reported it" in d.advice, d


def barrier_against_all_reduce():
    if dist.get_rank() == 0:
        dist.barrier()
    else:
        dist.all_reduce(torch.ones(1))


def test_f5_detail_set_before_the_job_is_said_to_have_reported_it():
    run = bl.run(barrier_against_all_reduce, 2, timeout=TIMEOUT, deadline=60, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    d = run.diagnosis
    assert d.kind == "mismatched-collectives", d
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL's check reported this mismatch (the errors above)." in d.advice, d
    assert "no rank's call reported it" not in d.advice, d


def test_f6_sigkill_advice_does_not_say_where_the_signal_came_from():
    run = bl.run(kills_itself, 3, timeout=TIMEOUT, deadline=60)
    assert run[2].signal == signal.SIGKILL, run
    d = run.diagnosis
    assert d.kind == "rank-failed", d
    assert "comes from outside the process" not in d.advice, d
    assert "SIGKILL cannot be caught, and the record does not show who sent it" in d.advice, d
    assert "or the rank itself (`os.kill(os.getpid(), signal.SIGKILL)`)" in d.advice, d
