"""review95d: the reviewer's findings on the diagnoses, each in the shape of the program that showed it (F1-F7b),
and the unsupported claims U2, U3 (removed)."""

from __future__ import annotations

import datetime
import os
import socket
import time

import torch
import torch.distributed as dist

import barrierlab as bl


def sizes4():
    r = dist.get_rank()
    t = torch.tensor([1000.0, 2000.0, 3000.0, 4000.0]) if r == 0 else torch.tensor([float(r), 10.0 * r])
    dist.all_reduce(t)
    return t.tolist()


def test_f1_different_sizes_says_what_the_finished_ranks_returned():
    run = bl.run(sizes4, world_size=4, timeout=5, deadline=60)
    d = run.diagnosis
    assert d.kind == "different-sizes", d
    assert "unreduced or partly reduced" not in d.advice
    returned = {tuple(v) for v in run.values if v is not None}
    assert len(returned) == 1, run  # what the other ranks got, whatever it is
    shown = list(returned.pop())
    assert f"returned {shown} with no error" in d.advice, d


def tags():
    t = torch.ones(2)
    for mb in range(2):
        if dist.get_rank() == 0:
            dist.send(t, dst=1, tag=mb)
        else:
            dist.recv(t, src=0)


def test_f2_f3_tags_that_differ_are_counted_and_advised():
    d = bl.run(tags, world_size=2, timeout=3, deadline=60).diagnosis
    assert d.kind == "unmatched-p2p", d
    # F2: the count is per tag, and says so
    assert "made only 1 send to rank 1 with tag 0" in d.headline, d
    assert "made only 1 send to rank 1;" not in d.headline
    # F3: the tags differ, not the peers or the counts
    assert "rank 0 sends to rank 1 with tag 1 and rank 1 receives from rank 0 with tag 0" in d.advice, d
    assert "pass the same tag on both sides" in d.advice
    assert "Check how each rank computes its peers" not in d.advice
    assert "one side made more calls" not in d.advice


def others_wait_full_timeout():
    r = dist.get_rank()
    t = torch.zeros(1)
    if r == 2:
        time.sleep(0.5)
        os._exit(5)
    if r == 1:
        time.sleep(6.5)
        return "slept"
    try:
        dist.recv(t, src=1)
    except RuntimeError:
        return "caught"


def test_f6_a_rank_that_made_no_p2p_call_is_not_said_to_wait_for_a_partner():
    run = bl.run(others_wait_full_timeout, world_size=3, timeout=4, deadline=60)
    assert run.statuses == ["finished", "finished", "exited"], run
    d = run.diagnosis
    assert d.kind == "unmatched-p2p", d
    assert "rank 2 did not finish: a point-to-point call had no partner" not in d.headline, d
    assert d.headline.startswith("Rank 2 exited (code 5)"), d
    assert "making no point-to-point call; separately, a point-to-point call had no partner" in d.headline
    assert "rank 0 caught the error of that recv" in d.headline


def async_then_check():
    t = torch.ones(4) * (dist.get_rank() + 1)
    dist.all_reduce(t, async_op=True)  # its handle dropped
    t.div_(2)
    raise RuntimeError("data-parallel replicas diverged")


def test_f4_an_unwaited_async_collective_is_named_when_a_rank_raises():
    d = bl.run(async_then_check, world_size=2, timeout=5, deadline=60).diagnosis
    assert d.kind == "rank-failed", d
    assert "no collective is to blame" not in d.headline, d
    assert "all_reduce(async_op=True) at " in d.headline and "was never waited for" in d.headline, d
    assert d.advice.startswith("Keep the Work handle of every async_op=True collective and call work.wait()"), d


def get_state(t):
    dist.recv(t, src=0)  # runs twice on rank 1 (as a recv in checkpointed code does when backward recomputes it)


def recv_twice():
    t = torch.zeros(2)
    if dist.get_rank() == 0:
        dist.send(t, dst=1)
        dist.recv(t, src=1)
    else:
        get_state(t)
        get_state(t)
        dist.send(t, dst=0)


def test_f5_a_cycle_with_an_extra_recv_says_so():
    d = bl.run(recv_twice, world_size=2, timeout=3, deadline=60).diagnosis
    assert d.kind == "p2p-cycle", d
    assert d.advice.startswith(
        "Rank 1's recv is its 2nd recv from rank 0, which had made 1 send to rank 1, it received by an earlier recv"
    ), d
    assert "that call is one too many" in d.advice


def side_store():
    dist.all_reduce(torch.ones(1))
    with socket.socket() as s:  # each rank picks its own free port: the bug
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.TCPStore(
        "127.0.0.1",
        port,
        2,
        is_master=dist.get_rank() == 0,
        timeout=datetime.timedelta(seconds=2),
        wait_for_workers=True,
    )


def test_f7_a_learners_tcpstore_is_not_the_group_set_up():
    d = bl.run(side_store, world_size=2, timeout=6, deadline=60).diagnosis
    text = str(d)
    assert "the group could not be set up" not in text, d  # F7a: the group had been set up
    assert "MASTER_ADDR" not in text, d  # F7b: the learner's store does not use them
    assert "the TCPStore made at " in text and "every rank must pass that store the same host and port" in text, d


def test_u2_u3_unsupported_claims_removed():
    import inspect

    from barrierlab import diagnose

    source = inspect.getsource(diagnose)
    assert "4 elements on 2 ranks are enough" not in source
    assert "its user guide (Collective Operations)" not in source


def env_set_inside_the_rank(subgroup: bool):
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"  # torch.distributed has read it already, at import
    g = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=3)) if subgroup else None
    if dist.get_rank() == 0:
        dist.barrier(group=g)
    else:
        dist.all_reduce(torch.ones(1), group=g)


def test_u1_detail_set_inside_a_rank_checks_no_group_made_after_it():
    run = bl.run(env_set_inside_the_rank, world_size=2, args=(True,), timeout=3, deadline=60)
    assert run.statuses != ["finished"] * 2, run
    assert not any("Detected mismatch" in (r.error_message or "") for r in run.ranks), run  # no check made
    d = bl.run(env_set_inside_the_rank, world_size=2, args=(False,), timeout=3, deadline=60).diagnosis
    assert d.kind == "mismatched-collectives", d
    assert "only on groups made after torch has read it, which it does when torch.distributed is imported" in (
        d.advice
    ), d
    assert "only on groups made after it is set" not in d.advice
