"""What ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` does for a collective that only some ranks make, on gloo (06's rules
paragraph, diagnose's "monitored barrier" explanation; review33b): the wrapper checks every call against the
other ranks' before running it, with a monitored barrier that waits for all ranks. So a rank whose peers went on
to another collective learns of the mismatch at once; a rank whose peers make no further collective waits the
group's timeout and is then told which ranks never arrived, all of them."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

import barrierlab as bl

DETAIL = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}


def all_reduce_on_rank0_then_barrier():
    start = time.monotonic()
    try:
        if dist.get_rank() == 0:
            dist.all_reduce(torch.ones(2))
        dist.barrier()
    except RuntimeError as error:
        return round(time.monotonic() - start, 1), str(error)
    return None


def test_detail_reports_a_skipped_collective_at_once_when_the_others_make_another():
    run = bl.run(all_reduce_on_rank0_then_barrier, 2, timeout=20, deadline=60, env=DETAIL)
    for seconds, message in run.values:
        assert "Detected mismatch between collectives on ranks" in message
        assert seconds < 10  # at once, not after the 20 s timeout


def all_reduce_on_rank0_alone():
    if dist.get_rank() != 0:
        time.sleep(4)  # no collective at all; still alive while rank 0 waits
        return None
    start = time.monotonic()
    try:
        dist.all_reduce(torch.ones(2))
    except RuntimeError as error:
        return round(time.monotonic() - start, 1), str(error)
    return None


def test_detail_names_every_rank_that_never_arrived_after_the_timeout():
    run = bl.run(all_reduce_on_rank0_alone, 3, timeout=2, deadline=60, env=DETAIL)
    seconds, message = run.values[0]
    assert "Ranks 1, 2 failed to pass monitoredBarrier" in message  # all of them, not the first only
    assert seconds >= 1.5  # after the group's timeout


def all_reduce_on_every_rank_but_0():
    if dist.get_rank() == 0:
        time.sleep(4)  # no collective at all; still alive while the others wait
        return None
    try:
        dist.all_reduce(torch.ones(2))
    except RuntimeError as error:
        return str(error)
    return None


def test_detail_when_rank_0_is_the_rank_that_skips_the_others_only_say_they_lost_rank_0():
    """The missing ranks are named by rank 0, which runs the monitored barrier: when rank 0 itself skips, the
    others only learn that rank 0 did not answer (review91b M2: 06's rules paragraph says so)."""
    run = bl.run(all_reduce_on_every_rank_but_0, 3, timeout=2, deadline=60, env=DETAIL)
    assert run.values[0] is None
    for message in run.values[1:]:
        assert "waiting for send/recv from rank 0" in message and "failed to pass monitoredBarrier" not in message
