"""Notebook 05's check rejects the wrong ways to keep 'only the barrier that is needed' and passes the right ones."""

from __future__ import annotations

import os
import time

import pytest
import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises import nb05


def _job(folder, steps, delay, base_compute, in_loop=None, after_write=(), before_read=None):
    """The exercise's loop; ``in_loop`` is called after every step, ``after_write`` after the write, and
    ``before_read`` on rank 0 before it lists the folder."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    loss = 0.0
    for step in range(steps):
        with bl.span("compute"):
            time.sleep(base_compute + (delay if rank == step % world_size else 0.0))
            loss += 1.0 / (step + 1)
        if in_loop:
            in_loop()
    with bl.span("write metrics", kind="io"):
        with open(os.path.join(folder, f"metrics-{rank}.txt"), "w") as f:
            f.write(f"{loss:.4f}\n")
    for call in after_write:
        call()
    if rank == 0:
        if before_read:
            before_read()
        with bl.span("read metrics", kind="io"):
            return sorted(os.listdir(folder))


def dummy_all_reduce():
    dist.all_reduce(torch.zeros(1))


def broadcast_from_0():
    dist.broadcast(torch.zeros(1), src=0)


def unsolved(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, in_loop=dist.barrier, after_write=[dist.barrier])


def all_reduce_in_the_loop(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, in_loop=dummy_all_reduce, after_write=[dist.barrier])


def sleep_instead_of_barrier(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, before_read=lambda: time.sleep(0.5))


def extra_barrier(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, after_write=[dist.barrier, dist.barrier])


def broadcast_instead_of_barrier(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, after_write=[broadcast_from_0], before_read=lambda: time.sleep(0.5))


def solution(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, after_write=[dist.barrier])


def all_reduce_after_write(folder, steps=4, delay=0.15, base_compute=0.05):
    """Also right on gloo: a blocking all_reduce orders host work exactly like a barrier."""
    return _job(folder, steps, delay, base_compute, after_write=[dummy_all_reduce])


@pytest.mark.parametrize(
    "answer, says",
    [
        (unsolved, "meet before writing (barrier, 4 times per rank)"),
        (all_reduce_in_the_loop, "all_reduce"),
        (sleep_instead_of_barrier, "sleep"),
        (extra_barrier, "protect nothing"),
        (broadcast_instead_of_barrier, "broadcast"),
    ],
)
def test_check_rejects_wrong_fixes(answer, says):
    feedback = nb05.check(answer, seed=1)
    assert not feedback.passed, feedback.message
    assert feedback.message.startswith("✗") and says in feedback.message, feedback.message


@pytest.mark.parametrize("answer, op", [(solution, "barrier"), (all_reduce_after_write, "all_reduce")])
def test_check_passes_right_fixes(answer, op):
    feedback = nb05.check(answer, seed=2)
    assert feedback.passed, feedback.message
    assert f"ordered by one {op} per rank" in feedback.message
