"""Notebook 03's check rejects the wrong fixes a learner is likely to try and accepts every right one."""

from __future__ import annotations

import os
import time

import pytest
import torch
import torch.distributed as dist

from barrierlab.exercises import nb03
from barrierlab.scenarios.hidden_collective import load_checkpoint, save_checkpoint, write_checkpoint
from barrierlab.sync import main_process_first

pytestmark = pytest.mark.usefixtures("no_leftovers")


def as_given(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    """The exercise as stored in the notebook: save_checkpoint() (and its barrier) on rank 0 only."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(ckpt_dir, "last.pt")
    weights = torch.zeros(4)
    for step in range(1, steps + 1):
        grad = torch.full((4,), float(rank))
        dist.all_reduce(grad)
        weights -= 0.1 * grad / world_size
        if rank == 0 and step % save_every == 0:
            save_checkpoint({"step": step, "weights": weights}, path, save_delay)
    return load_checkpoint(path)["step"]


def _loop(ckpt_dir, steps, save_every, save_delay, on_save, before_load=lambda: None):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(ckpt_dir, "last.pt")
    weights = torch.zeros(4)
    for step in range(1, steps + 1):
        grad = torch.full((4,), float(rank))
        dist.all_reduce(grad)
        weights -= 0.1 * grad / world_size
        if step % save_every == 0:
            on_save(rank, {"step": step, "weights": weights}, path, save_delay)
    before_load()
    return load_checkpoint(path)["step"]


def sleep_instead_of_barrier(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, lambda: time.sleep(0.3))


def long_sleep_instead_of_barrier(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, lambda: time.sleep(1.5))


def sleep_added_to_the_bug(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            save_checkpoint(state, path, delay)
        time.sleep(0.3)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save)


def barrier_removed(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save)


def dummy_all_reduce_on_the_others(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            save_checkpoint(state, path, delay)
        else:
            dist.all_reduce(torch.zeros(1))  # "answer rank 0's collective"

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save)


def extra_barrier_for_everyone(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            save_checkpoint(state, path, delay)
        dist.barrier()  # "now every rank calls a barrier"

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save)


def every_rank_writes(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        save_checkpoint(state, path, delay)  # the helper on every rank, the write too

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save)


def every_rank_writes_its_own_file(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    """review78d M5: ranks 1-3 write files of their own (last1.pt ...), rank 0 last.pt; no file is shared."""

    def on_save(rank, state, path, delay):
        save_checkpoint(state, path if rank == 0 else path.replace("last.pt", f"last{rank}.pt"), delay)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save)


def solution(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)
        dist.barrier()  # every rank waits until the file is complete

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save)


def barrier_in_both_branches(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            save_checkpoint(state, path, delay)
        else:
            dist.barrier()  # pairs with the barrier inside save_checkpoint: same position, same op

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save)


def all_reduce_as_the_wait(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)
        dist.all_reduce(torch.zeros(1))  # a blocking all_reduce orders host work like a barrier on gloo

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save)


def one_barrier_before_the_load(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, dist.barrier)


def async_barrier_never_waited(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)
        dist.barrier(async_op=True)  # "non-blocking is faster"; the handle is dropped

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, lambda: time.sleep(0.3))


def polling_for_the_file(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)

    def wait_for_the_file():
        path = os.path.join(ckpt_dir, "last.pt")
        while not os.path.exists(path):  # the file of an earlier save is already there
            time.sleep(0.01)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, wait_for_the_file)


def store_key_set_before_the_write(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    store = dist.distributed_c10d._get_default_store()

    def on_save(rank, state, path, delay):
        if rank == 0:
            store.set(f"saved {state['step']}", "1")  # too early: says "saved" before writing
            write_checkpoint(state, path, delay)

    def wait_for_the_key():
        store.wait([f"saved {steps}"])
        time.sleep(0.2)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, wait_for_the_key)


def barrier_before_the_write(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        dist.barrier()  # orders the previous step, not this write
        if rank == 0:
            write_checkpoint(state, path, delay)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, lambda: time.sleep(0.3))


def rank0_loads_and_broadcasts(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    """Rank 0 alone reads the checkpoint and hands its step over: the others skip the evaluation."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(ckpt_dir, "last.pt")
    weights = torch.zeros(4)
    for step in range(1, steps + 1):
        grad = torch.full((4,), float(rank))
        dist.all_reduce(grad)
        weights -= 0.1 * grad / world_size
        if rank == 0 and step % save_every == 0:
            write_checkpoint({"step": step, "weights": weights}, path, save_delay)
    box = [load_checkpoint(path)["step"] if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def store_key_after_the_write(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    store = dist.distributed_c10d._get_default_store()

    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)
            store.set(f"saved {state['step']}", "1")

    def wait_for_the_key():
        if dist.get_rank() != 0:
            store.wait([f"saved {steps}"])

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, wait_for_the_key)


def send_recv_before_the_load(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)

    def hand_over():
        if dist.get_rank() == 0:
            for r in range(1, dist.get_world_size()):
                dist.send(torch.tensor([steps]), dst=r)
        else:
            dist.recv(torch.zeros(1, dtype=torch.int64), src=0)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, hand_over)


def async_barrier_waited(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    pending = []

    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)
        pending.append(dist.barrier(async_op=True))

    def wait_all():
        for work in pending:
            work.wait()

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, wait_all)


def async_barrier_future_waited(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    """review 14a: a wait through the Work's future was rejected as never waited on."""

    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)
        dist.barrier(async_op=True).get_future().wait()

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, lambda: None)


def async_barrier_polled(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    """review 14a: polling work.is_completed() until True was rejected as never waited on."""

    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)
        work = dist.barrier(async_op=True)
        while not work.is_completed():
            time.sleep(0.002)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, lambda: None)


def with_main_process_first(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        with main_process_first() as is_main:
            if is_main:
                write_checkpoint(state, path, delay)

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save)


def broadcast_the_step_from_rank0(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def on_save(rank, state, path, delay):
        if rank == 0:
            write_checkpoint(state, path, delay)

    def hear_from_rank0():
        dist.broadcast_object_list([steps], src=0)  # receivers leave only after rank 0 entered, on gloo

    return _loop(ckpt_dir, steps, save_every, save_delay, on_save, hear_from_rank0)


WRONG = [
    (as_given, "not every rank finished"),
    (sleep_instead_of_barrier, "nothing orders them"),
    (long_sleep_instead_of_barrier, "nothing orders them"),
    (sleep_added_to_the_bug, "not every rank finished"),
    (barrier_removed, "nothing orders them"),
    (dummy_all_reduce_on_the_others, "not every rank finished"),
    (extra_barrier_for_everyone, "not every rank finished"),
    (every_rank_writes, "wrote the checkpoint too"),
    (async_barrier_never_waited, "nothing orders them"),
    (polling_for_the_file, "nothing orders them"),
    (store_key_set_before_the_write, "nothing orders them"),
    (barrier_before_the_write, "nothing orders them"),
    (rank0_loads_and_broadcasts, "never read the checkpoint"),
]
RIGHT = [
    solution,
    barrier_in_both_branches,
    all_reduce_as_the_wait,
    one_barrier_before_the_load,
    store_key_after_the_write,
    send_recv_before_the_load,
    async_barrier_waited,
    async_barrier_future_waited,
    async_barrier_polled,
    with_main_process_first,
    broadcast_the_step_from_rank0,
]


@pytest.mark.parametrize("wrong, says", WRONG, ids=[fn.__name__ for fn, _ in WRONG])
def test_the_check_rejects_a_wrong_fix(wrong, says):
    verdict = nb03.check(wrong, seed=1)
    assert not verdict.ok and verdict.message.startswith("✗"), verdict
    assert says in verdict.message, verdict
    if "not every rank finished" in says:  # the message sends the learner to the check's run: it is there
        assert "v.run.ledger()" in verdict.message and "#" in verdict.run.ledger(), verdict


@pytest.mark.parametrize("right", RIGHT, ids=[fn.__name__ for fn in RIGHT])
def test_the_check_accepts_a_right_fix(right):
    verdict = nb03.check(right, seed=2)
    assert verdict.ok and verdict.message.startswith("✓"), verdict


def test_ranks_writing_files_of_their_own_are_not_said_to_race_on_one():
    message = nb03.check(every_rank_writes_its_own_file, seed=1).message
    assert message.startswith("✗ not yet: ranks 1–3 wrote checkpoint files of their own"), message
    assert "`last1.pt`, `last2.pt`, `last3.pt`" in message and "Only rank 0 should write" in message, message
    assert "race" not in message and "one file" not in message, message


def test_a_sleep_is_told_which_read_nothing_ordered_after_the_write():
    message = nb03.check(long_sleep_instead_of_barrier, seed=3).message
    assert "read `last.pt`" in message and "after rank 0 replaced it" in message, message
    assert "came from timing" in message, message


def test_the_check_wants_a_function():
    with pytest.raises(TypeError, match="function to run on every rank"):
        nb03.check(None)
