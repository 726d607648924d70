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


def with_async_barrier_and_plain_wait(folder, delays):
    _write(folder, delays)
    dist.barrier(async_op=True).wait()  # the recorder sees Work.wait() of the learner's async calls
    return _count(folder)


def with_async_barrier_and_its_future(folder, delays):
    """review 14a: a wait through the Work's future was rejected as never waited on."""
    _write(folder, delays)
    dist.barrier(async_op=True).get_future().wait()
    return _count(folder)


def with_async_barrier_and_wait_all(folder, delays):
    """attack11 a09b: torch.futures.wait_all of the barrier's future was rejected as never waited on."""
    _write(folder, delays)
    torch.futures.wait_all([dist.barrier(async_op=True).get_future()])
    return _count(folder)


def with_async_barrier_and_a_chained_future(folder, delays):
    """attack11 a17: a future chained with then() completes after the barrier's: waiting for it waits for both."""
    _write(folder, delays)
    dist.barrier(async_op=True).get_future().then(lambda future: None).wait()
    return _count(folder)


def with_async_barrier_polled(folder, delays):
    """review 14a: polling work.is_completed() until True was rejected as never waited on."""
    _write(folder, delays)
    work = dist.barrier(async_op=True)
    while not work.is_completed():
        time.sleep(0.002)
    return _count(folder)


def with_store_keys(folder, delays):
    _write(folder, delays)
    store = dist.group.WORLD.get_group_store() if hasattr(dist.group.WORLD, "get_group_store") else None
    store = store or dist.distributed_c10d._get_default_store()
    store.set(f"ready-{dist.get_rank()}", "1")
    store.wait([f"ready-{r}" for r in range(dist.get_world_size())])
    return _count(folder)


def with_a_store_counter(folder, delays):
    _write(folder, delays)
    store = dist.distributed_c10d._get_default_store()
    store.add("written", 1)
    while int(store.get("written")) < dist.get_world_size():  # polling, but each get is a store edge
        time.sleep(0.01)
    return _count(folder)


def with_gather_then_broadcast(folder, delays):
    _write(folder, delays)
    rank = dist.get_rank()
    box = [torch.zeros(1) for _ in range(dist.get_world_size())] if rank == 0 else None
    dist.gather(torch.zeros(1), box, dst=0)  # rank 0 leaves once every rank entered...
    dist.broadcast(torch.zeros(1), src=0)  # ...and the others wait for rank 0 here
    return _count(folder)


def with_send_recv_through_rank0(folder, delays):
    _write(folder, delays)
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        for r in range(1, world):
            dist.recv(torch.zeros(1), src=r)
        for r in range(1, world):
            dist.send(torch.zeros(1), dst=r)
    else:
        dist.send(torch.zeros(1), dst=0)
        dist.recv(torch.zeros(1), src=0)
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


def with_async_all_reduce_and_wait_all_of_another_future(folder, delays):
    _write(folder, delays)
    dist.all_reduce(torch.zeros(1), async_op=True)  # never waited for: the future waited for is not its own
    own = torch.futures.Future()
    own.set_result(None)
    torch.futures.wait_all([own])
    time.sleep(0.8)
    return _count(folder)


def with_barrier_before_the_write_and_a_sleep(folder, delays):
    dist.barrier()  # an extra barrier, in the wrong place
    _write(folder, delays)
    time.sleep(0.8)
    return _count(folder)


def with_gather_only(folder, delays):
    _write(folder, delays)
    box = [torch.zeros(1) for _ in range(dist.get_world_size())] if dist.get_rank() == 0 else None
    dist.gather(torch.zeros(1), box, dst=0)  # orders the writes before rank 0 only...
    time.sleep(0.8)  # ...the others count after a sleep
    return _count(folder)


def with_polling_the_folder(folder, delays):
    _write(folder, delays)
    while len(os.listdir(folder)) < dist.get_world_size():  # polling: no ordering edge, only the clock
        time.sleep(0.01)
    return _count(folder)


def with_store_key_set_before_the_write(folder, delays):
    store = dist.distributed_c10d._get_default_store()
    store.set(f"ready-{dist.get_rank()}", "1")  # the key says "ready" before the file is there
    store.wait([f"ready-{r}" for r in range(dist.get_world_size())])
    _write(folder, delays)
    time.sleep(0.8)
    return _count(folder)


def with_barrier_on_rank0_only(folder, delays):
    _write(folder, delays)
    if dist.get_rank() == 0:
        dist.barrier()
    return _count(folder)


def with_barrier_inside_the_count_span(folder, delays):
    """review15a: the barrier as the first line inside the `count` span still comes before the listing."""
    _write(folder, delays)
    with bl.span("count", kind="io"):
        dist.barrier()
        return len(os.listdir(folder))


def with_barrier_inside_the_write_span(folder, delays):
    rank = dist.get_rank()
    time.sleep(delays[rank])
    with bl.span("write", kind="io"):
        open(os.path.join(folder, f"ready{rank}"), "w").close()
        dist.barrier()
    return _count(folder)


def with_barrier_inside_the_count_span_after_the_listing(folder, delays):
    _write(folder, delays)
    with bl.span("count", kind="io"):
        found = len(os.listdir(folder))
        dist.barrier()
        return found


def late_rank_skips_its_work(folder, delays):
    rank = dist.get_rank()
    if delays[rank] < 0.3:  # "removing the failing rank's work": the late rank neither waits nor writes
        _write(folder, delays)
    dist.barrier()
    return _count(folder)


RIGHT = [
    with_barrier,
    with_blocking_all_reduce,
    with_async_barrier_and_wait,
    with_async_barrier_and_plain_wait,
    with_async_barrier_and_its_future,
    with_async_barrier_and_wait_all,
    with_async_barrier_and_a_chained_future,
    with_async_barrier_polled,
    with_all_gather_object,
    with_store_keys,
    with_a_store_counter,
    with_gather_then_broadcast,
    with_send_recv_through_rank0,
    with_barrier_inside_the_count_span,
    with_barrier_inside_the_write_span,
]
WRONG = [
    (unsolved, "counted"),
    (with_sleep, "nothing orders them"),
    (with_broadcast, "nothing orders them"),
    (with_async_all_reduce_never_waited, "never waited on"),
    (with_async_all_reduce_and_wait_all_of_another_future, "never waited on"),
    (with_barrier_before_the_write_and_a_sleep, "nothing orders them"),
    (with_gather_only, "nothing orders them"),
    (with_polling_the_folder, "nothing orders them"),
    (with_store_key_set_before_the_write, "nothing orders them"),
    (with_barrier_on_rank0_only, "did not finish"),
    (late_rank_skips_its_work, "no 'write'"),
    (with_barrier_inside_the_count_span_after_the_listing, "counted|nothing orders them"),
]


@pytest.mark.parametrize("fn", RIGHT)
def test_right_fixes_pass(fn, capsys):
    assert nb00.check_everyone_ready(fn, seed=1)
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize("fn, says", WRONG)
def test_wrong_fixes_fail(fn, says, capsys):
    result = nb00.check_everyone_ready(fn, seed=2)
    out = capsys.readouterr().out
    assert not result and out.startswith("✗"), out
    assert any(option in out for option in says.split("|")), out


def test_the_message_names_the_unordered_pair_and_its_lines(capsys):
    nb00.check_everyone_ready(with_sleep, seed=2)
    out = capsys.readouterr().out
    assert "listed `barrierlab-ready-" in out, out
    # the sleep made the creation come first, by the clock alone: the message says so
    assert "after rank" in out and "created `ready" in out and "by timing alone" in out, out
    assert "test_exercises_nb00.py, line" in out, out


def test_the_check_leaves_no_folder_in_the_temp_folder(tmp_path, monkeypatch):
    """Each check made a folder per run and left it: 17-19 a day on this machine, from notebook runs alone."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's own temp folder: others' checks run too
    nb00.check_everyone_ready(with_sleep, seed=2, quiet=True)
    assert not list(tmp_path.glob("barrierlab-ready-*"))
