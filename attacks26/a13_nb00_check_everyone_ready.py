"""Notebook 00's check_everyone_ready: wrong answers (right APIs, wrong order / wrong ranks) must get ✗ with a
reason; right answers written differently from the model answer must get ✓."""

import os
import sys
import time

import _h
import torch
import torch.distributed as dist
from _h import bl

from barrierlab.exercises.nb00 import check_everyone_ready


def _write(folder):
    with bl.span("write", kind="io"):
        open(os.path.join(folder, f"ready{dist.get_rank()}"), "w").close()


def _count(folder):
    with bl.span("count", kind="io"):
        return len(os.listdir(folder))


# (a) wrong
def w_barrier_before_write(folder, delays):
    time.sleep(delays[dist.get_rank()])
    dist.barrier()
    _write(folder)
    time.sleep(0.6)
    return _count(folder)


def w_async_not_waited(folder, delays):
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    dist.barrier(async_op=True)
    time.sleep(0.6)
    return _count(folder)


def w_subgroup_without_late(folder, delays):
    g = dist.new_group([0, 1])
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    if dist.get_rank() in (0, 1):
        dist.barrier(group=g)
    time.sleep(0.6)
    return _count(folder)


def w_own_subgroups(folder, delays):
    sub, _ = dist.new_subgroups(2)
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    dist.barrier(group=sub)
    time.sleep(0.6)
    return _count(folder)


def w_broadcast(folder, delays):
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    dist.broadcast(torch.zeros(1), src=0)
    time.sleep(0.6)
    return _count(folder)


# (b) right, written differently
def sync_everyone():
    dist.barrier()


def r_helper(folder, delays):
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    sync_everyone()
    return _count(folder)


def r_all_reduce(folder, delays):
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    dist.all_reduce(torch.ones(1))
    return _count(folder)


def r_store_counter(folder, delays):
    from torch.distributed.distributed_c10d import _get_default_store

    store = _get_default_store()
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    if store.add("ready", 1) == dist.get_world_size():
        store.set("all_ready", "1")
    store.wait(["all_ready"])
    return _count(folder)


def r_async_waited(folder, delays):
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    work = dist.barrier(async_op=True)
    work.wait()
    return _count(folder)


def r_group_of_all(folder, delays):
    g = dist.new_group(list(range(dist.get_world_size())))
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    dist.barrier(group=g)
    return _count(folder)


def r_all_gather_object(folder, delays):
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    got = [None] * dist.get_world_size()
    dist.all_gather_object(got, dist.get_rank())
    return _count(folder)


def r_monitored(folder, delays):
    time.sleep(delays[dist.get_rank()])
    _write(folder)
    dist.monitored_barrier()
    return _count(folder)


if __name__ == "__main__":
    cases = [
        (f.__name__, f, f.__name__.startswith("r_"))
        for f in [
            w_barrier_before_write,
            w_async_not_waited,
            w_subgroup_without_late,
            w_own_subgroups,
            w_broadcast,
            r_helper,
            r_all_reduce,
            r_store_counter,
            r_async_waited,
            r_group_of_all,
            r_all_gather_object,
            r_monitored,
        ]
    ]
    sys.exit(_h.check_cases(check_everyone_ready, cases, quiet=True))
