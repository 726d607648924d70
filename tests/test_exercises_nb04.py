"""Notebook 04's check rejects the wrong fixes a learner is likely to try and accepts every right one."""

from __future__ import annotations

import os
import shutil
import tempfile
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


def rank0_evaluates_every_share(steps=4):
    """Rank 0 computes the loss of every rank's share itself: right number, the others' work skipped."""
    model, rank = _trained(steps)
    if rank == 0:
        return sum(local_loss(model, r) for r in range(dist.get_world_size())) / dist.get_world_size()
    return None


def async_all_reduce_never_waited(steps=4):
    model, rank = _trained(steps)
    total = torch.tensor([local_loss(model, rank)])
    dist.all_reduce(total, async_op=True)  # the handle is dropped: nothing says the sum is complete
    time.sleep(0.3)
    return total.item() / dist.get_world_size() if rank == 0 else None


def _shared_folder():
    box = [tempfile.mkdtemp(prefix="barrierlab-nb04-") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _through_files(steps, wait):
    model, rank = _trained(steps)
    folder = _shared_folder()
    with open(os.path.join(folder, f"loss{rank}.txt"), "w") as f:
        f.write(repr(local_loss(model, rank)))
    wait()
    if rank != 0:
        return None
    losses = []
    for r in range(dist.get_world_size()):
        with open(os.path.join(folder, f"loss{r}.txt")) as f:
            losses.append(float(f.read()))
    shutil.rmtree(folder)
    return sum(losses) / len(losses)


def files_after_a_sleep(steps=4):
    return _through_files(steps, lambda: time.sleep(0.3))


def files_after_a_barrier(steps=4):
    return _through_files(steps, dist.barrier)


def reduce_to_rank0(steps=4):
    model, rank = _trained(steps)
    total = torch.tensor([local_loss(model, rank)])
    dist.reduce(total, dst=0)
    return total.item() / dist.get_world_size() if rank == 0 else None


def all_gather_the_losses(steps=4):
    model, rank = _trained(steps)
    losses = [torch.zeros(1) for _ in range(dist.get_world_size())]
    dist.all_gather(losses, torch.tensor([local_loss(model, rank)]))
    return torch.cat(losses).mean().item() if rank == 0 else None


def gather_to_rank0(steps=4):
    model, rank = _trained(steps)
    losses = [torch.zeros(1) for _ in range(dist.get_world_size())] if rank == 0 else None
    dist.gather(torch.tensor([local_loss(model, rank)]), losses, dst=0)
    return torch.cat(losses).mean().item() if rank == 0 else None


def gather_object_to_rank0(steps=4):
    model, rank = _trained(steps)
    losses = [None] * dist.get_world_size() if rank == 0 else None
    dist.gather_object(local_loss(model, rank), losses, dst=0)
    return sum(losses) / len(losses) if rank == 0 else None


def send_recv_to_rank0(steps=4):
    model, rank = _trained(steps)
    mine = torch.tensor([local_loss(model, rank)], dtype=torch.float64)
    if rank != 0:
        dist.send(mine, dst=0)
        return None
    total = mine.item()
    for r in range(1, dist.get_world_size()):
        other = torch.zeros(1, dtype=torch.float64)
        dist.recv(other, src=r)
        total += other.item()
    return total / dist.get_world_size()


def store_keys_to_rank0(steps=4):
    model, rank = _trained(steps)
    store = dist.distributed_c10d._get_default_store()
    store.set(f"loss {rank}", repr(local_loss(model, rank)))
    if rank != 0:
        return None
    losses = [float(store.get(f"loss {r}")) for r in range(dist.get_world_size())]  # get waits for the key
    return sum(losses) / len(losses)


def async_all_reduce_read_before_wait(steps=4):
    model, rank = _trained(steps)
    total = torch.tensor([local_loss(model, rank)])
    work = dist.all_reduce(total, async_op=True)
    time.sleep(0.3)  # the sum has arrived by now, on an idle machine
    value = total.item() / dist.get_world_size()  # read before the wait: timing alone ordered it
    work.wait()
    return value if rank == 0 else None


def async_all_reduce_read_after_a_long_sleep(steps=4):
    """review 13: a 3.3 s sleep got past a hold of at most 3 s."""
    model, rank = _trained(steps)
    total = torch.tensor([local_loss(model, rank)])
    work = dist.all_reduce(total, async_op=True)
    time.sleep(3.3)
    value = total.item() / dist.get_world_size()
    work.wait()
    return value if rank == 0 else None


def async_all_reduce_waited(steps=4):
    model, rank = _trained(steps)
    total = torch.tensor([local_loss(model, rank)])
    work = dist.all_reduce(total, async_op=True)
    work.wait()
    return total.item() / dist.get_world_size() if rank == 0 else None


def async_all_reduce_future_waited(steps=4):
    """review 13: waiting through the Work's future was rejected (the recorder saw only Work.wait())."""
    model, rank = _trained(steps)
    total = torch.tensor([local_loss(model, rank)])
    dist.all_reduce(total, async_op=True).get_future().wait()
    return total.item() / dist.get_world_size() if rank == 0 else None


def async_all_reduce_polled(steps=4):
    """review 13: polling work.is_completed() until True, then reading, was rejected."""
    model, rank = _trained(steps)
    total = torch.tensor([local_loss(model, rank)])
    work = dist.all_reduce(total, async_op=True)
    while not work.is_completed():
        time.sleep(0.001)
    return total.item() / dist.get_world_size() if rank == 0 else None


WRONG = [
    (as_given, "not every rank finished"),
    (with_a_sleep, "not every rank finished"),
    (dummy_all_reduce_on_the_others, "never computed their own validation loss"),
    (extra_barrier_on_the_others, "not every rank finished"),
    (averaging_dropped, "its own validation loss"),
    (fixed_number, "never computed their own validation loss"),
    (rank0_evaluates_every_share, "rank 0 computed 4 shares itself"),
    (async_all_reduce_never_waited, "nothing orders rank"),
    (files_after_a_sleep, "nothing orders them"),
    (async_all_reduce_read_before_wait, "held back"),
    (async_all_reduce_read_after_a_long_sleep, "held back"),
]
RIGHT = [
    solution,
    every_rank_averages_its_own_loss,
    reduce_to_rank0,
    all_gather_the_losses,
    gather_to_rank0,
    gather_object_to_rank0,
    send_recv_to_rank0,
    store_keys_to_rank0,
    async_all_reduce_waited,
    async_all_reduce_future_waited,
    async_all_reduce_polled,
    files_after_a_barrier,
]


@pytest.mark.parametrize("wrong, says", WRONG, ids=[fn.__name__ for fn, _ in WRONG])
def test_the_check_rejects_a_wrong_fix(wrong, says):
    verdict = nb04.check(wrong, seed=1)
    assert not verdict.ok and verdict.message.startswith("✗"), verdict
    assert says in verdict.message, verdict


@pytest.mark.parametrize("right", RIGHT, ids=[fn.__name__ for fn in RIGHT])
def test_the_check_accepts_a_right_fix(right):
    verdict = nb04.check(right, seed=2)
    assert verdict.ok and verdict.message.startswith("✓"), verdict


def test_dropping_the_averaging_is_named():
    assert "its own validation loss" in nb04.check(averaging_dropped, seed=3).message


def test_the_check_wants_a_function():
    with pytest.raises(TypeError, match="function to run on every rank"):
        nb04.check(42)
