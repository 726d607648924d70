"""Notebook 05's check: wrong answers (right APIs in the wrong order / on the wrong ranks) must get ✗ with a reason;
right answers written differently from the model answer must get ✓."""

import os
import sys
import time

import _h
import torch
import torch.distributed as dist
from _h import bl

from barrierlab.exercises import nb05


def _steps(steps, delay, base_compute, per_step=None):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    loss = 0.0
    for step in range(steps):
        with bl.span("compute"):
            time.sleep(base_compute + (delay if rank == step % world_size else 0.0))
            loss += 1.0 / (step + 1)
        if per_step:
            per_step()
    return loss


def _write(folder, loss):
    with bl.span("write metrics", kind="io"):
        with open(os.path.join(folder, f"metrics-{dist.get_rank()}.txt"), "w") as f:
            f.write(f"{loss:.4f}\n")


def _read(folder):
    with bl.span("read metrics", kind="io"):
        return sorted(os.listdir(folder))


def _poll_read(folder):
    for _ in range(500):  # a wrong answer that still sees all files, by polling the listing
        if len(os.listdir(folder)) >= dist.get_world_size():
            break
        time.sleep(0.005)
    return _read(folder)


# (a) wrong
def w_barrier_before_write(folder, steps=4, delay=0.15, base_compute=0.05):
    loss = _steps(steps, delay, base_compute)
    dist.barrier()
    _write(folder, loss)
    return _poll_read(folder) if dist.get_rank() == 0 else None


def w_gather_to_rank1(folder, steps=4, delay=0.15, base_compute=0.05):
    loss = _steps(steps, delay, base_compute)
    _write(folder, loss)
    r = dist.get_rank()
    dist.gather(torch.ones(1), [torch.zeros(1) for _ in range(dist.get_world_size())] if r == 1 else None, dst=1)
    return _poll_read(folder) if r == 0 else None


def w_async_unwaited(folder, steps=4, delay=0.15, base_compute=0.05):
    loss = _steps(steps, delay, base_compute)
    _write(folder, loss)
    dist.barrier(async_op=True)
    return _poll_read(folder) if dist.get_rank() == 0 else None


def w_keep_step_barriers_drop_last(folder, steps=4, delay=0.15, base_compute=0.05):
    loss = _steps(steps, delay, base_compute, per_step=dist.barrier)
    _write(folder, loss)
    return _poll_read(folder) if dist.get_rank() == 0 else None


# (b) right, written differently
def wait_for_writers():
    dist.barrier()


def r_helper_barrier(folder, steps=4, delay=0.15, base_compute=0.05):
    loss = _steps(steps, delay, base_compute)
    _write(folder, loss)
    wait_for_writers()
    return _read(folder) if dist.get_rank() == 0 else None


def r_gather_to_0(folder, steps=4, delay=0.15, base_compute=0.05):
    loss = _steps(steps, delay, base_compute)
    _write(folder, loss)
    r = dist.get_rank()
    dist.gather(torch.ones(1), [torch.zeros(1) for _ in range(dist.get_world_size())] if r == 0 else None, dst=0)
    return _read(folder) if r == 0 else None


def r_store_keys(folder, steps=4, delay=0.15, base_compute=0.05):
    from torch.distributed.distributed_c10d import _get_default_store

    store = _get_default_store()
    loss = _steps(steps, delay, base_compute)
    _write(folder, loss)
    r = dist.get_rank()
    if r != 0:
        store.set(f"metrics/{r}", "written")
        return None
    store.wait([f"metrics/{p}" for p in range(1, dist.get_world_size())])
    return _read(folder)


def r_recv_loop(folder, steps=4, delay=0.15, base_compute=0.05):
    loss = _steps(steps, delay, base_compute)
    _write(folder, loss)
    r = dist.get_rank()
    if r != 0:
        dist.send(torch.ones(1), dst=0)
        return None
    for peer in range(1, dist.get_world_size()):
        dist.recv(torch.zeros(1), src=peer)
    return _read(folder)


def r_all_reduce_of_loss(folder, steps=4, delay=0.15, base_compute=0.05):
    loss = _steps(steps, delay, base_compute)
    _write(folder, loss)
    total = torch.tensor([loss])
    dist.all_reduce(total)  # the mean loss, which also orders the writes
    return _read(folder) if dist.get_rank() == 0 else None


if __name__ == "__main__":
    cases = [
        (f.__name__, f, f.__name__.startswith("r_"))
        for f in [
            w_barrier_before_write,
            w_gather_to_rank1,
            w_async_unwaited,
            w_keep_step_barriers_drop_last,
            r_helper_barrier,
            r_gather_to_0,
            r_store_keys,
            r_recv_loop,
            r_all_reduce_of_loss,
        ]
    ]
    sys.exit(_h.check_cases(nb05.check, cases))
