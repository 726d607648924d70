"""Notebook 01's check_vocab: wrong answers (right APIs, wrong order / wrong ranks) must get ✗ with a reason;
right answers written differently from the model answer must get ✓."""

import os
import sys
import time

import _h
import torch
import torch.distributed as dist
from _h import bl

from barrierlab.exercises.nb01 import check_vocab
from barrierlab.sync import main_process_first


def _build(path, build_seconds):
    with bl.span("build", kind="io"):
        time.sleep(build_seconds)
        with open(path, "w") as f:
            f.write("<pad> <unk> the a of")


def _read(path):
    with bl.span("read", kind="io"):
        with open(path) as f:
            return f.read().split()


def _safe_read(path):
    for _ in range(400):  # a wrong answer that still reads the whole file, by polling (so only order is wrong)
        try:
            if os.path.getsize(path) >= 20:
                break
        except OSError:
            pass
        time.sleep(0.005)
    return _read(path)


# (a) wrong
def w_broadcast_from_reader(folder, build_seconds):
    rank, path = dist.get_rank(), os.path.join(folder, "vocab.txt")
    if rank == 0:
        _build(path, build_seconds)
    dist.broadcast(torch.zeros(1), src=1)  # from the wrong rank: rank 1 need not wait for rank 0's build
    return _safe_read(path)


def w_mpf_wraps_nothing(folder, build_seconds):
    rank, path = dist.get_rank(), os.path.join(folder, "vocab.txt")
    with main_process_first():
        pass
    if rank == 0:
        _build(path, build_seconds)
    return _safe_read(path)


def w_barrier_after_read(folder, build_seconds):
    rank, path = dist.get_rank(), os.path.join(folder, "vocab.txt")
    if rank == 0:
        _build(path, build_seconds)
    v = _safe_read(path)
    dist.barrier()
    return v


def w_subgroup_of_readers(folder, build_seconds):
    rank, path = dist.get_rank(), os.path.join(folder, "vocab.txt")
    g = dist.new_group([1, 2, 3])
    if rank == 0:
        _build(path, build_seconds)
    else:
        dist.barrier(group=g)
    return _safe_read(path)


def w_async_allreduce_unwaited(folder, build_seconds):
    rank, path = dist.get_rank(), os.path.join(folder, "vocab.txt")
    if rank == 0:
        _build(path, build_seconds)
    dist.all_reduce(torch.ones(1), async_op=True)
    return _safe_read(path)


# (b) right, written differently
def r_main_process_first(folder, build_seconds):
    rank, path = dist.get_rank(), os.path.join(folder, "vocab.txt")
    with main_process_first():
        if rank == 0:
            _build(path, build_seconds)
    return _read(path)


def r_broadcast_from_builder(folder, build_seconds):
    rank, path = dist.get_rank(), os.path.join(folder, "vocab.txt")
    if rank == 0:
        _build(path, build_seconds)
    dist.broadcast(torch.zeros(1), src=0)
    return _read(path)


def r_store_key(folder, build_seconds):
    from torch.distributed.distributed_c10d import _get_default_store

    rank, path, store = dist.get_rank(), os.path.join(folder, "vocab.txt"), _get_default_store()
    if rank == 0:
        _build(path, build_seconds)
        store.set("vocab_ready", "1")
    else:
        store.wait(["vocab_ready"])
    return _read(path)


def r_send_recv_loop(folder, build_seconds):
    rank, path = dist.get_rank(), os.path.join(folder, "vocab.txt")
    if rank == 0:
        _build(path, build_seconds)
        for dst in range(1, dist.get_world_size()):
            dist.send(torch.ones(1), dst=dst)
    else:
        dist.recv(torch.zeros(1), src=0)
    return _read(path)


def r_barrier_in_each_branch(folder, build_seconds):
    rank, path = dist.get_rank(), os.path.join(folder, "vocab.txt")
    if rank == 0:
        _build(path, build_seconds)
        dist.barrier()
    else:
        dist.barrier()
    return _read(path)


def r_object_broadcast_of_path(folder, build_seconds):
    rank = dist.get_rank()
    holder = [None]
    if rank == 0:
        p = os.path.join(folder, "vocab.txt")
        _build(p, build_seconds)
        holder = [p]
    dist.broadcast_object_list(holder, src=0)
    return _read(holder[0])


if __name__ == "__main__":
    cases = [
        (f.__name__, f, f.__name__.startswith("r_"))
        for f in [
            w_broadcast_from_reader,
            w_mpf_wraps_nothing,
            w_barrier_after_read,
            w_subgroup_of_readers,
            w_async_allreduce_unwaited,
            r_main_process_first,
            r_broadcast_from_builder,
            r_store_key,
            r_send_recv_loop,
            r_barrier_in_each_branch,
            r_object_broadcast_of_path,
        ]
    ]
    sys.exit(_h.check_cases(check_vocab, cases, quiet=True))
