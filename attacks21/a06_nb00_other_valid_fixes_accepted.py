"""nb00's check on 22 correct fixes written other ways (other APIs, aliases, helpers, threads, store idioms), and on
4 wrong ones that only pass by timing (a call that does not wait on gloo, then a 1 s sleep; barriers on
subgroups). Promise: the check passes every fix the ordering model orders and refuses what orders nothing.
Held if every correct fix gets ✓ and every wrong one ✗ (the ProcessGroup.barrier method is a04, the timed-out
wait a01)."""

import functools
import os
import threading
import time

import _common  # noqa: F401
import torch
import torch.distributed as dist
from torch.distributed import barrier

import barrierlab as bl
from barrierlab.exercises.nb00 import check_everyone_ready

sync = dist.barrier
psync = functools.partial(dist.barrier)


def make(syncer):
    def everyone_ready(folder, delays):
        rank = dist.get_rank()
        time.sleep(delays[rank])
        with bl.span("write", kind="io"):
            open(os.path.join(folder, f"ready{rank}"), "w").close()
        syncer()
        with bl.span("count", kind="io"):
            return len(os.listdir(folder))

    return everyone_ready


def store():
    return dist.distributed_c10d._get_default_store()


RIGHT = {
    "from torch.distributed import barrier": lambda: barrier(),
    "module-level alias sync = dist.barrier": lambda: sync(),
    "functools.partial(dist.barrier)": lambda: psync(),
    "monitored_barrier": lambda: dist.monitored_barrier(),
    "all_to_all_single": lambda: dist.all_to_all_single(
        torch.zeros(dist.get_world_size()), torch.ones(dist.get_world_size())
    ),
    "all_gather_into_tensor": lambda: dist.all_gather_into_tensor(torch.zeros(dist.get_world_size()), torch.ones(1)),
    "elastic store barrier": lambda: __import__("torch.distributed.elastic.utils.store", fromlist=["barrier"]).barrier(
        store(), dist.get_world_size(), key_prefix="ready"
    ),
    "barrier in a joined thread": lambda: (lambda t: (t.start(), t.join()))(threading.Thread(target=dist.barrier)),
    "torch.futures.wait_all": lambda: torch.futures.wait_all([dist.barrier(async_op=True).get_future()]),
    "collect_all(...).wait()": lambda: torch.futures.collect_all([dist.barrier(async_op=True).get_future()]).wait(),
    "future.then(...).wait()": lambda: dist.barrier(async_op=True).get_future().then(lambda f: None).wait(),
    "all_gather_object": lambda: dist.all_gather_object([None] * dist.get_world_size(), dist.get_rank()),
    "reduce then broadcast": lambda: (lambda t: (dist.reduce(t, 0), dist.broadcast(t, 0)))(torch.ones(1)),
    "async all_reduce, future.wait()": lambda: dist.all_reduce(torch.zeros(1), async_op=True).get_future().wait(),
    "new_group() barrier": lambda: dist.barrier(group=dist.new_group()),
    "new_group(use_local_synchronization)": lambda: dist.barrier(
        group=dist.new_group(list(range(dist.get_world_size())), use_local_synchronization=True)
    ),
}


def gather_scatter():
    r, w, t = dist.get_rank(), dist.get_world_size(), torch.ones(1)
    dist.gather(t, [torch.zeros(1) for _ in range(w)] if r == 0 else None, dst=0)
    dist.scatter(t, [torch.zeros(1) for _ in range(w)] if r == 0 else None, src=0)


def store_check_poll():
    r, w = dist.get_rank(), dist.get_world_size()
    store().set(f"ready{r}", "1")
    while not store().check([f"ready{i}" for i in range(w)]):
        time.sleep(0.01)


def store_add_poll():
    store().add("n", 1)
    while store().add("n", 0) < dist.get_world_size():
        time.sleep(0.01)


def store_wait():
    store().set(f"ready{dist.get_rank()}", "1")
    store().wait([f"ready{i}" for i in range(dist.get_world_size())])


def store_multi_get():
    store().set(f"ready{dist.get_rank()}", "1")
    store().multi_get([f"ready{i}" for i in range(dist.get_world_size())])


def batch_p2p():
    r, w = dist.get_rank(), dist.get_world_size()
    if r == 0:
        for q in dist.batch_isend_irecv([dist.P2POp(dist.irecv, torch.zeros(1), i) for i in range(1, w)]):
            q.wait()
        for q in dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.ones(1), i) for i in range(1, w)]):
            q.wait()
    else:
        for q in dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.ones(1), 0)]):
            q.wait()
        for q in dist.batch_isend_irecv([dist.P2POp(dist.irecv, torch.zeros(1), 0)]):
            q.wait()


RIGHT.update(
    {
        "gather then scatter": gather_scatter,
        "store.check poll": store_check_poll,
        "store.add counter poll": store_add_poll,
        "store.wait": store_wait,
        "store.multi_get": store_multi_get,
        "batch_isend_irecv to rank 0 and back": batch_p2p,
    }
)


def sleep_after(call):
    def syncer():
        call()
        time.sleep(1.0)

    return syncer


def fut_value():
    try:
        dist.all_reduce(torch.ones(1), async_op=True).get_future().value()
    except RuntimeError:
        pass


WRONG = {
    "Work.synchronize() + sleep": sleep_after(lambda: dist.barrier(async_op=True).synchronize()),
    "Future.value() + sleep": sleep_after(fut_value),
    "Work.exception() + sleep": sleep_after(lambda: dist.all_reduce(torch.ones(1), async_op=True).exception()),
    "barrier on new_subgroups(2)": lambda: dist.barrier(group=dist.new_subgroups(2)[0]),
}

bad = []
for name, syncer in RIGHT.items():
    v = check_everyone_ready(make(syncer), quiet=True)
    print(f"right  {'✓' if v.ok else '✗'}  {name}: {v.message[:160]}", flush=True)
    if not v.ok:
        bad.append(name)
for name, syncer in WRONG.items():
    v = check_everyone_ready(make(syncer), quiet=True)
    print(f"wrong  {'✓' if v.ok else '✗'}  {name}: {v.message[:160]}", flush=True)
    if v.ok:
        bad.append(name)
_common.finish(bool(bad), f"misjudged: {bad}" if bad else f"{len(RIGHT)} right fixes ✓, {len(WRONG)} wrong ones ✗")
