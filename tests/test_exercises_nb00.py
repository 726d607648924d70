"""Notebook 00's check: it passes every right fix and rejects the wrong ones a learner is likely to try,
deciding from the recorded order of events (real 4-rank runs)."""

from __future__ import annotations

import os
import time

import pytest
import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises import nb00


def _write(folder, delays):
    rank = dist.get_rank()
    time.sleep(delays[rank])
    with bl.span("write", kind="io"):
        open(os.path.join(folder, f"ready{rank}"), "w").close()
    return rank


def _count(folder):
    with bl.span("count", kind="io"):
        return len(os.listdir(folder))


def unsolved(folder, delays):
    _write(folder, delays)
    return _count(folder)


def with_barrier(folder, delays):
    _write(folder, delays)
    dist.barrier()
    return _count(folder)


def with_blocking_all_reduce(folder, delays):
    _write(folder, delays)
    dist.all_reduce(torch.zeros(1))  # blocking: on gloo it orders host work exactly like a barrier
    return _count(folder)


def with_async_barrier_and_wait(folder, delays):
    _write(folder, delays)
    work = dist.barrier(async_op=True)
    with bl.span("wait", kind="wait"):  # the recorder keeps torch's Work untouched: a span shows the wait
        work.wait()
    return _count(folder)


def with_async_barrier_and_unmarked_wait(folder, delays):
    _write(folder, delays)
    dist.barrier(async_op=True).wait()  # right, but invisible to the record: the check asks for a wait span
    return _count(folder)


def with_all_gather_object(folder, delays):
    _write(folder, delays)
    seen = [None] * dist.get_world_size()
    dist.all_gather_object(seen, dist.get_rank())
    return _count(folder)


def with_sleep(folder, delays):
    _write(folder, delays)
    time.sleep(1)  # long enough for these delays: the counts come out right, by timing alone
    return _count(folder)


def with_broadcast(folder, delays):
    _write(folder, delays)
    dist.broadcast(torch.zeros(1), src=0)  # the root leaves without waiting for the others...
    time.sleep(0.8)  # ...and this hides it: the counts come out right
    return _count(folder)


def with_async_all_reduce_never_waited(folder, delays):
    _write(folder, delays)
    dist.all_reduce(torch.zeros(1), async_op=True)  # returns at once: orders nothing until wait()
    time.sleep(0.8)
    return _count(folder)


def with_barrier_before_the_write_and_a_sleep(folder, delays):
    dist.barrier()  # an extra barrier, in the wrong place
    _write(folder, delays)
    time.sleep(0.8)
    return _count(folder)


def with_barrier_on_rank0_only(folder, delays):
    _write(folder, delays)
    if dist.get_rank() == 0:
        dist.barrier()
    return _count(folder)


def late_rank_skips_its_work(folder, delays):
    rank = dist.get_rank()
    if delays[rank] < 0.3:  # "removing the failing rank's work": the late rank neither waits nor writes
        _write(folder, delays)
    dist.barrier()
    return _count(folder)


@pytest.mark.parametrize(
    "fn", [with_barrier, with_blocking_all_reduce, with_async_barrier_and_wait, with_all_gather_object]
)
def test_right_fixes_pass(fn, capsys):
    assert nb00.check_everyone_ready(fn, seed=1)
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize(
    "fn, says",
    [
        (unsolved, "counted"),
        (with_sleep, "nothing made rank"),
        (with_broadcast, "did not wait for rank"),
        (with_async_all_reduce_never_waited, "async_op=True"),
        (with_barrier_before_the_write_and_a_sleep, "nothing made rank"),
        (with_barrier_on_rank0_only, "did not finish"),
        (late_rank_skips_its_work, "no 'write'"),
    ],
)
def test_wrong_fixes_fail(fn, says, capsys):
    result = nb00.check_everyone_ready(fn, seed=2)
    out = capsys.readouterr().out
    assert not result and out.startswith("✗"), out
    assert any(option in out for option in says.split("|")), out


def test_an_async_wait_the_record_cannot_see_is_not_accepted(capsys):
    """Right on gloo, but torch's Work is not wrapped, so only a wait span shows the wait: the check says so."""
    assert not nb00.check_everyone_ready(with_async_barrier_and_unmarked_wait, seed=2)
    assert "no wait on it" in capsys.readouterr().out
