"""Notebook 03's check: wrong answers (right APIs in the wrong order / on the wrong ranks) must get ✗ with a reason;
right answers written differently from the model answer must get ✓."""

import os
import sys

import _h
import torch
import torch.distributed as dist

from barrierlab.exercises import nb03
from barrierlab.scenarios.hidden_collective import load_checkpoint, save_checkpoint, write_checkpoint
from barrierlab.sync import main_process_first


def _loop(ckpt_dir, steps, save_every, save_delay, on_save, before_save=None):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    path = os.path.join(ckpt_dir, "last.pt")
    weights = torch.zeros(4)
    for step in range(1, steps + 1):
        grad = torch.full((4,), float(rank))
        dist.all_reduce(grad)
        weights -= 0.1 * grad / world_size
        if step % save_every == 0:
            if before_save:
                before_save(step, steps)
            on_save(rank, {"step": step, "weights": weights}, path, save_delay)
    return path


# (a) wrong
def w_barrier_before_last_write(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def save(rank, state, path, d):
        if rank == 0:
            write_checkpoint(state, path, d)

    path = _loop(ckpt_dir, steps, save_every, save_delay, save, lambda s, n: dist.barrier() if s == n else None)
    return load_checkpoint(path)["step"]


def w_others_barrier_only_once(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def save(rank, state, path, d):
        if rank == 0:
            save_checkpoint(state, path, d)
        elif state["step"] == steps:
            dist.barrier()

    path = _loop(ckpt_dir, steps, save_every, save_delay, save)
    return load_checkpoint(path)["step"]


def w_async_barrier_unwaited(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def save(rank, state, path, d):
        if rank == 0:
            write_checkpoint(state, path, d)

    path = _loop(ckpt_dir, steps, save_every, save_delay, save)
    dist.barrier(async_op=True)
    return load_checkpoint(path)["step"] if dist.get_rank() == 0 else _poll_load(path, steps)


def _poll_load(path, steps):
    import time

    for _ in range(1000):
        if os.path.exists(path):
            try:
                v = torch.load(path)["step"]
                if v == steps:
                    break
            except Exception:
                pass
        time.sleep(0.01)
    return load_checkpoint(path)["step"]


def w_broadcast_from_rank1(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def save(rank, state, path, d):
        if rank == 0:
            write_checkpoint(state, path, d)

    path = _loop(ckpt_dir, steps, save_every, save_delay, save)
    dist.broadcast(torch.zeros(1), src=1)
    return load_checkpoint(path)["step"] if dist.get_rank() in (0, 1) else _poll_load(path, steps)


# (b) right, written differently
def r_mirror_barrier(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def save(rank, state, path, d):
        if rank == 0:
            save_checkpoint(state, path, d)  # its barrier ...
        else:
            dist.barrier()  # ... pairs with this one

    path = _loop(ckpt_dir, steps, save_every, save_delay, save)
    return load_checkpoint(path)["step"]


def r_one_barrier_after_loop(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def save(rank, state, path, d):
        if rank == 0:
            write_checkpoint(state, path, d)

    path = _loop(ckpt_dir, steps, save_every, save_delay, save)
    dist.barrier()
    return load_checkpoint(path)["step"]


def r_main_process_first_load(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def save(rank, state, path, d):
        if rank == 0:
            write_checkpoint(state, path, d)

    path = _loop(ckpt_dir, steps, save_every, save_delay, save)
    with main_process_first():
        step = load_checkpoint(path)["step"]
    return step


def r_store_key(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    from torch.distributed.distributed_c10d import _get_default_store

    def save(rank, state, path, d):
        if rank == 0:
            write_checkpoint(state, path, d)

    path = _loop(ckpt_dir, steps, save_every, save_delay, save)
    store = _get_default_store()
    if dist.get_rank() == 0:
        store.set("last_ckpt", path)
    else:
        store.wait(["last_ckpt"])
    return load_checkpoint(path)["step"]


def r_broadcast_step_from_writer(ckpt_dir, steps=4, save_every=2, save_delay=0.0):
    def save(rank, state, path, d):
        if rank == 0:
            write_checkpoint(state, path, d)

    path = _loop(ckpt_dir, steps, save_every, save_delay, save)
    dist.broadcast(torch.zeros(1), src=0)
    return load_checkpoint(path)["step"]


if __name__ == "__main__":
    cases = [
        (f.__name__, f, f.__name__.startswith("r_"))
        for f in [
            w_barrier_before_last_write,
            w_others_barrier_only_once,
            w_async_barrier_unwaited,
            w_broadcast_from_rank1,
            r_mirror_barrier,
            r_one_barrier_after_loop,
            r_main_process_first_load,
            r_store_key,
            r_broadcast_step_from_writer,
        ]
    ]
    sys.exit(_h.check_cases(nb03.check, cases))
