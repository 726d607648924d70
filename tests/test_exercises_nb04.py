"""Notebook 04's check rejects the wrong fixes a learner is likely to try and accepts every right one."""

from __future__ import annotations

import time

import pytest
import torch
import torch.distributed as dist

from barrierlab.exercises import nb04
from barrierlab.scenarios.find_the_bug import average, evaluate, local_loss, train_step

pytestmark = pytest.mark.usefixtures("no_leftovers")


def _trained(steps):
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    for step in range(1, steps + 1):
        train_step(model, rank, step)
    return model, rank


def as_given(steps=4):
    model, rank = _trained(steps)
    val_loss = None
    if rank == 0:
        val_loss = evaluate(model, rank)
    return val_loss


def with_a_sleep(steps=4):
    model, rank = _trained(steps)
    time.sleep(0.5)  # "give the others time"
    return evaluate(model, rank) if rank == 0 else None


def dummy_all_reduce_on_the_others(steps=4):
    model, rank = _trained(steps)
    if rank == 0:
        return evaluate(model, rank)
    dist.all_reduce(torch.zeros(1))  # "answer rank 0's all_reduce"
    return None


def extra_barrier_on_the_others(steps=4):
    model, rank = _trained(steps)
    if rank == 0:
        return evaluate(model, rank)
    dist.barrier()
    return None


def averaging_dropped(steps=4):
    model, rank = _trained(steps)
    return local_loss(model, rank) if rank == 0 else None  # no collective left to deadlock on


def fixed_number(steps=4):
    _trained(steps)
    return 0.6573


def solution(steps=4):
    model, rank = _trained(steps)
    val_loss = evaluate(model, rank)  # every rank: it contains an all_reduce
    if rank == 0:
        print(f"validation loss after {steps} steps: {val_loss:.4f}")
    return val_loss


def every_rank_averages_its_own_loss(steps=4):
    model, rank = _trained(steps)
    mean = average(local_loss(model, rank))
    return mean if rank == 0 else None


@pytest.mark.parametrize(
    "wrong",
    [
        as_given,
        with_a_sleep,
        dummy_all_reduce_on_the_others,
        extra_barrier_on_the_others,
        averaging_dropped,
        fixed_number,
    ],
)
def test_the_check_rejects_a_wrong_fix(wrong):
    verdict = nb04.check(wrong, seed=1)
    assert not verdict.ok and verdict.message.startswith("✗"), verdict


@pytest.mark.parametrize("right", [solution, every_rank_averages_its_own_loss])
def test_the_check_accepts_a_right_fix(right):
    verdict = nb04.check(right, seed=2)
    assert verdict.ok and verdict.message.startswith("✓"), verdict


def test_dropping_the_averaging_is_named():
    assert "its own validation loss" in nb04.check(averaging_dropped, seed=3).message


def test_the_check_wants_a_function():
    with pytest.raises(TypeError, match="function to run on every rank"):
        nb04.check(42)
