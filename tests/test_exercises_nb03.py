"""Notebook 03's check rejects the wrong fixes a learner is likely to try and accepts every right one."""

from __future__ import annotations

import os
import time

import pytest
import torch
import torch.distributed as dist

from barrierlab.exercises import nb03
from barrierlab.scenarios.hidden_collective import load_checkpoint, save_checkpoint, write_checkpoint

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


@pytest.mark.parametrize(
    "wrong",
    [
        as_given,
        sleep_instead_of_barrier,
        long_sleep_instead_of_barrier,
        sleep_added_to_the_bug,
        barrier_removed,
        dummy_all_reduce_on_the_others,
        extra_barrier_for_everyone,
        every_rank_writes,
    ],
)
def test_the_check_rejects_a_wrong_fix(wrong):
    verdict = nb03.check(wrong, seed=1)
    assert not verdict.ok and verdict.message.startswith("✗"), verdict


@pytest.mark.parametrize(
    "right", [solution, barrier_in_both_branches, all_reduce_as_the_wait, one_barrier_before_the_load]
)
def test_the_check_accepts_a_right_fix(right):
    verdict = nb03.check(right, seed=2)
    assert verdict.ok and verdict.message.startswith("✓"), verdict


def test_a_sleep_is_told_that_nothing_made_the_ranks_wait():
    assert "before rank 0 had finished writing" in nb03.check(sleep_instead_of_barrier, seed=3).message


def test_a_long_sleep_is_told_that_it_waited_for_a_clock():
    assert "waited for a clock" in nb03.check(long_sleep_instead_of_barrier, seed=3).message


def test_the_check_wants_a_function():
    with pytest.raises(TypeError, match="function to run on every rank"):
        nb03.check(None)
