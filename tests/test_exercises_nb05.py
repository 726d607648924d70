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


def two_broadcasts_from_0(folder, steps=4, delay=0.15, base_compute=0.05):
    """Right on gloo (review 9b): the first broadcast holds rank 1 until its child rank 3 has entered, the second
    holds rank 0 until its child rank 1 has: a chain that orders rank 3's write before rank 0's read."""
    return _job(folder, steps, delay, base_compute, after_write=[broadcast_from_0, broadcast_from_0])


def gather_to_rank0():
    rank = dist.get_rank()
    dist.gather(torch.zeros(1), [torch.zeros(1) for _ in range(dist.get_world_size())] if rank == 0 else None, dst=0)


def store_keys():
    store = dist.distributed_c10d._get_default_store()
    store.set(f"metrics-{dist.get_rank()}", "written")
    if dist.get_rank() == 0:
        store.wait([f"metrics-{r}" for r in range(dist.get_world_size())])


def send_to_rank0():
    if dist.get_rank() == 0:
        for r in range(1, dist.get_world_size()):
            dist.recv(torch.zeros(1), src=r)
    else:
        dist.send(torch.ones(1), dst=0)


def async_barrier_waited():
    dist.barrier(async_op=True).wait()


def async_barrier_never_waited():
    dist.barrier(async_op=True)


def async_barrier_unwaited_and_sleep(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(
        folder,
        steps,
        delay,
        base_compute,
        after_write=[async_barrier_never_waited],
        before_read=lambda: time.sleep(0.5),
    )


def recv_from_rank1():
    if dist.get_rank() == 0:
        dist.recv(torch.zeros(1), src=1)
    elif dist.get_rank() == 1:
        dist.send(torch.ones(1), dst=0)


def recv_in_the_loop(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, in_loop=recv_from_rank1, after_write=[dist.barrier])


def gather_in_the_loop(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, in_loop=gather_to_rank0, after_write=[dist.barrier])


def store_key_only_for_rank0s_own_file(folder, steps=4, delay=0.15, base_compute=0.05):
    def own():
        store = dist.distributed_c10d._get_default_store()
        store.set(f"metrics-{dist.get_rank()}", "written")
        if dist.get_rank() == 0:
            store.wait(["metrics-0"])  # waits for its own key only
            time.sleep(0.5)

    return _job(folder, steps, delay, base_compute, after_write=[own])


def with_gather(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, after_write=[gather_to_rank0])


def with_store_keys(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, after_write=[store_keys])


def with_send_recv(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, after_write=[send_to_rank0])


def with_async_barrier_waited(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, after_write=[async_barrier_waited])


def solution(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, after_write=[dist.barrier])


def no_barrier_at_all(folder, steps=4, delay=0.15, base_compute=0.05):
    """Both barriers deleted (what learners often try first)."""
    return _job(folder, steps, delay, base_compute)


def all_reduce_after_write(folder, steps=4, delay=0.15, base_compute=0.05):
    """Also right on gloo: a blocking all_reduce orders host work exactly like a barrier."""
    return _job(folder, steps, delay, base_compute, after_write=[dummy_all_reduce])


def no_training_loop(folder, steps=4, delay=0.15, base_compute=0.05):
    """review 12b: the loop deleted, so nobody waits in it; the write, the barrier and the read are right."""
    return _job(folder, 0, delay, base_compute, after_write=[dist.barrier])


def empty_compute_spans(folder, steps=4, delay=0.15, base_compute=0.05):
    """review 13: four 'compute' spans with no work in them."""
    return _job(folder, steps, 0.0, 0.0, after_write=[dist.barrier])


def two_spans_per_step(folder, steps=4, delay=0.15, base_compute=0.05):
    """Right (review 13): each step's work timed as two spans."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    for step in range(steps):
        for _half in range(2):
            with bl.span("compute"):
                time.sleep((base_compute + (delay if rank == step % world_size else 0.0)) / 2)
    with bl.span("write metrics", kind="io"):
        with open(os.path.join(folder, f"metrics-{rank}.txt"), "w") as f:
            f.write("1.0\n")
    dist.barrier()
    if rank == 0:
        with bl.span("read metrics", kind="io"):
            return sorted(os.listdir(folder))


def fewer_steps_on_some_ranks(folder, steps=4, delay=0.15, base_compute=0.05):
    """The loop cut short on the slow ranks: the straggler 'fixed' by skipping its work."""
    return _job(folder, steps if dist.get_rank() == 0 else 1, delay, base_compute, after_write=[dist.barrier])


WRONG = [
    (no_training_loop, "keep the training loop"),
    (fewer_steps_on_some_ranks, "keep the training loop"),
    (empty_compute_spans, "keep the training loop"),
    (unsolved, "meet before writing"),
    (all_reduce_in_the_loop, "all_reduce"),
    (gather_in_the_loop, "meet before writing"),
    (recv_in_the_loop, "meet before writing"),
    (sleep_instead_of_barrier, "nothing orders them"),
    (extra_barrier, "protect nothing"),
    (broadcast_instead_of_barrier, "nothing orders them"),
    (async_barrier_unwaited_and_sleep, "never waited on"),
    (store_key_only_for_rank0s_own_file, "nothing orders them"),
]


def count_steps_on_the_store():
    """A progress counter for a dashboard: store.add never waits for another rank (attack12 r11)."""
    dist.distributed_c10d._get_default_store().add("steps done", 1)


def solution_with_a_progress_counter(folder, steps=4, delay=0.15, base_compute=0.05):
    return _job(folder, steps, delay, base_compute, in_loop=count_steps_on_the_store, after_write=(dist.barrier,))


RIGHT = [
    (solution, "barrier"),
    (two_spans_per_step, "barrier"),
    (all_reduce_after_write, "all_reduce"),
    (with_gather, "gather"),
    (with_store_keys, "wait"),
    (with_send_recv, "recv"),
    (with_async_barrier_waited, "Work.wait"),
    (two_broadcasts_from_0, "broadcast"),
    (solution_with_a_progress_counter, "barrier"),
]


@pytest.mark.parametrize("answer, says", WRONG)
def test_check_rejects_wrong_fixes(answer, says):
    feedback = nb05.check(answer, seed=1)
    assert not feedback.passed, feedback.message
    assert feedback.message.startswith("✗") and says in feedback.message, feedback.message


@pytest.mark.parametrize("answer, op", RIGHT)
def test_check_passes_right_fixes(answer, op):
    feedback = nb05.check(answer, seed=2)
    assert feedback.passed, feedback.message
    assert f"ordered before its read by {op}" in feedback.message, feedback.message


def test_meeting_count_counts_the_calls_in_the_loop():
    feedback = nb05.check(unsolved, seed=3)
    assert "rank 0 met the other ranks in 4 calls before its write (4 × barrier at line " in feedback.message, (
        feedback.message
    )


def test_meeting_names_only_the_ranks_waited_for():
    feedback = nb05.check(recv_in_the_loop, seed=3)
    assert "rank 0 met rank 1 in 4 calls before its write (4 × recv at line " in feedback.message, feedback.message


@pytest.mark.parametrize("seed", [1, 2])
def test_check_rejects_deleting_both_barriers_with_what_rank_0_saw(seed):
    """The notes quote these two messages: a file missing at the read, or every file there by timing alone."""
    feedback = nb05.check(no_barrier_at_all, seed=seed)
    assert not feedback.passed, feedback.message
    assert "files" in feedback.message or "nothing orders them" in feedback.message, feedback.message
