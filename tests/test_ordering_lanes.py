"""The ordering model on a rank's threads and forked children, from real runs: a thread's file accesses are
recorded (with its lane) and ordered after the ``Thread.start`` that began it and before a ``join`` that saw it end,
a forked child's (a ``DataLoader`` worker's) after the fork and before the ``join`` that reaped it; nothing else
orders them with the rank's collectives (attack11 a11, a16)."""

from __future__ import annotations

import os
import time

import pytest

import barrierlab as bl

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]


def _write(path: str, text: str = "ready") -> None:
    with open(path, "w") as f:
        f.write(text)


def _read(path: str) -> str:
    for _ in range(100):  # the learner's "retry until it is there"
        try:
            with open(path) as f:
                return f.read()
        except FileNotFoundError:
            time.sleep(0.02)
    return ""


def writer_thread_then_barrier(folder: str, join_first: bool) -> str:
    """Rank 0 saves in a writer thread, which writes at once; the rank reaches the barrier 0.3 s later, by which
    time the write is long over. Unless the thread is joined before the barrier, nothing orders the write before
    the other ranks' reads after it: it came first by timing alone (attack11 a11)."""
    import threading

    import torch.distributed as dist

    path = os.path.join(folder, "state.json")
    saver = None
    if dist.get_rank() == 0:
        saver = threading.Thread(target=_write, args=(path,), name="saver")
        saver.start()
        time.sleep(0.3)
        if join_first:
            saver.join()
    dist.barrier()
    if saver is not None and not join_first:
        saver.join()
    return _read(path)


@pytest.mark.parametrize("join_first", [False, True], ids=["joined-after-the-barrier", "joined-before-the-barrier"])
def test_a_threads_write_is_ordered_before_the_barrier_only_by_a_join_before_it(tmp_path, join_first):
    run = bl.run(writer_thread_then_barrier, 3, args=(str(tmp_path), join_first), timeout=10)
    assert run.ok and run.values == ["ready"] * 3, run
    writes = [e for e in run[0].events if e.kind == "file" and e.name == "write"]
    assert len(writes) == 1 and writes[0].lane and "saver" in writes[0].lane, writes  # recorded, in its lane
    races = run.races()
    if join_first:
        assert races == [], races
    else:
        assert {(r.first.rank, r.first.how, r.second.rank, r.second.how) for r in races} == {
            (0, "write", 1, "read"),
            (0, "write", 2, "read"),
        }, races
        assert "rank 0's thread 1 (saver) opened it for writing at test_ordering_lanes.py" in str(races[0]), races[0]


def reader_thread_after_the_barrier(folder: str) -> str:
    """Rank 1 writes, then the barrier; rank 0 starts a thread after it that reads: the thread's read comes after
    its start, which comes after the barrier."""
    import threading

    import torch.distributed as dist

    path = os.path.join(folder, "shard.txt")
    if dist.get_rank() == 1:
        time.sleep(0.2)
        _write(path)
    dist.barrier()
    found = []
    if dist.get_rank() == 0:
        reader = threading.Thread(target=lambda: found.append(_read(path)))
        reader.start()
        reader.join()
    return found[0] if found else ""


def test_a_thread_started_after_the_barrier_reads_in_order(tmp_path):
    run = bl.run(reader_thread_after_the_barrier, 2, args=(str(tmp_path),), timeout=10)
    assert run.ok and run.values == ["ready", ""], run
    assert [e.lane is not None for e in run[0].events if e.kind == "file"] == [True], run[0].events
    assert run.races() == [], run.races()


class _Shard:
    """A map-style dataset of one item that reads the shard (a DataLoader worker calls it)."""

    def __init__(self, path: str, delay: float) -> None:
        self.path, self.delay = path, delay

    def __len__(self) -> int:
        return 1

    def __getitem__(self, i: int) -> int:
        time.sleep(self.delay)  # a slow first item: the worker warms up
        with open(self.path) as f:
            return len(f.read())


def loader_worker_reads_the_shard(folder: str, started_before: bool) -> int:
    """Rank 1 writes the shard, then the barrier; rank 0's DataLoader worker (a forked child) reads it. Started
    before the barrier (``iter(loader)`` forks the worker), the worker reads after it only by timing
    (attack11 a16); started after the barrier, its fork comes after the barrier."""
    import torch.distributed as dist
    from torch.utils.data import DataLoader

    path = os.path.join(folder, "shard.txt")
    rank = dist.get_rank()
    batches = None
    if rank == 0 and started_before:
        batches = iter(DataLoader(_Shard(path, 0.3), num_workers=1, batch_size=None))
    if rank == 1:
        _write(path, "0123456789")
    dist.barrier()
    if rank == 0:
        if batches is None:
            batches = iter(DataLoader(_Shard(path, 0.0), num_workers=1, batch_size=None))
        return int(next(batches))
    return 0


@pytest.mark.parametrize("started_before", [True, False], ids=["worker-before-the-barrier", "worker-after-it"])
def test_a_data_workers_read_is_ordered_after_its_fork_not_after_the_parents_later_barrier(tmp_path, started_before):
    run = bl.run(loader_worker_reads_the_shard, 2, args=(str(tmp_path), started_before), timeout=20, deadline=60)
    assert run.ok and run.values == [10, 0], run
    races = run.races()
    if started_before:
        assert [(r.first.rank, r.first.how, r.second.rank, r.second.how) for r in races] == [(1, "write", 0, "read")]
        assert "rank 0's child process" in str(races[0]), races[0]
    else:
        assert races == [], races
    barrier = next(e for e in run[0].events if e.kind == "collective")
    reads = [e for e in run[0].events if e.kind == "file" and e.name == "read" and e.path.endswith("shard.txt")]
    assert len(reads) == 1 and reads[0].lane.startswith("process ") and reads[0].start > barrier.end, reads


def child_writes_then_joined(folder: str, joined: bool) -> str:
    """Rank 0 forks a child (multiprocessing's fork start method) that writes the file; joined before the
    barrier, its write is ordered before the other rank's read after it; joined after, it is not."""
    import multiprocessing

    import torch.distributed as dist

    path = os.path.join(folder, "made-by-a-child.txt")
    child = None
    if dist.get_rank() == 0:
        child = multiprocessing.get_context("fork").Process(target=_write, args=(path,))
        child.start()
        if joined:
            child.join()
        else:
            time.sleep(0.5)
    dist.barrier()
    if child is not None and not joined:
        child.join()
    return _read(path)


@pytest.mark.parametrize("joined", [True, False], ids=["joined-before-the-barrier", "joined-after-it"])
def test_a_forked_childs_write_is_ordered_before_the_join_that_reaped_it(tmp_path, joined):
    run = bl.run(child_writes_then_joined, 2, args=(str(tmp_path), joined), timeout=20, deadline=60)
    assert run.ok and run.values == ["ready"] * 2, run
    races = run.races()
    if joined:
        assert races == [], races
    else:
        assert [(r.first.rank, r.first.how, r.second.rank, r.second.how) for r in races] == [(0, "write", 1, "read")]


def write_from_a_thread_threading_does_not_know(folder: str, wait: str) -> int:
    """Rank 1 writes from a thread started with ``_thread.start_new_thread`` (no ``Thread`` object, no
    ``Thread.start``), waits for it, then the barrier; rank 0 reads after it. Waited through a ``threading.Event``
    (its ``set`` and a ``wait`` that found it set are recorded since attack13 a03), the write is ordered; waited by
    sleeping, nothing the model knows orders it: a race, never a false order. Recording it makes no dummy
    ``Thread`` object for it either."""
    import _thread
    import threading
    import time

    import torch.distributed as dist

    path = os.path.join(folder, "raw.txt")
    if dist.get_rank() == 1:
        done = threading.Event()
        _thread.start_new_thread(lambda: (_write(path), done.set()), ())
        if wait == "event":
            done.wait(10)
        else:
            time.sleep(0.5)
    dummies = sum(isinstance(t, threading._DummyThread) for t in threading.enumerate())
    dist.barrier()
    if dist.get_rank() == 0:
        _read(path)
    return dummies


@pytest.mark.parametrize("wait", ["event", "sleep"])
def test_a_thread_threading_does_not_know_is_recorded_and_ordered_only_by_what_it_recorded(tmp_path, wait):
    run = bl.run(write_from_a_thread_threading_does_not_know, 2, args=(str(tmp_path), wait), timeout=10)
    assert run.ok and run.values == [0, 0], run
    races = run.races()
    writes = [e for e in run[1].events if e.kind == "file" and e.name == "write"]
    assert len(writes) == 1 and "not a Python thread" in writes[0].lane, writes
    if wait == "event":
        assert races == [], races
    else:
        assert [(r.first.rank, r.first.how, r.second.rank, r.second.how) for r in races] == [(1, "write", 0, "read")]


def save_in_a_thread_pool(folder: str, result_first: bool) -> str:
    """Rank 0 saves through a ``ThreadPoolExecutor`` (an async checkpointer's usual shape): with the future's
    ``result()`` before the barrier, the save is ordered before the other rank's read after it; with it after,
    the save is over before the barrier only by timing."""
    from concurrent.futures import ThreadPoolExecutor

    import torch.distributed as dist

    path = os.path.join(folder, "checkpoint.txt")
    with ThreadPoolExecutor(max_workers=1) as pool:
        saved = None
        if dist.get_rank() == 0:
            saved = pool.submit(_write, path)
            if result_first:
                saved.result()
            else:
                time.sleep(0.3)
        dist.barrier()
        if saved is not None and not result_first:
            saved.result()
        return _read(path)


@pytest.mark.parametrize("result_first", [True, False], ids=["result-before-the-barrier", "result-after-it"])
def test_a_thread_pools_task_is_ordered_before_the_result_that_had_its_outcome(tmp_path, result_first):
    run = bl.run(save_in_a_thread_pool, 2, args=(str(tmp_path), result_first), timeout=10)
    assert run.ok and run.values == ["ready"] * 2, run
    races = run.races()
    if result_first:
        assert races == [], races
    else:
        assert [(r.first.rank, r.first.how, r.second.rank, r.second.how) for r in races] == [(0, "write", 1, "read")]


def save_in_a_thread_then_queue(folder: str) -> str:
    """attack13 a03: rank 0's saver thread writes, then puts "done" on a queue.Queue; rank 0 gets it, then the
    barrier; rank 1 reads after the barrier. The put and the get that returned are recorded: ordered."""
    import queue
    import threading

    import torch.distributed as dist

    path = os.path.join(folder, "queued.txt")
    if dist.get_rank() == 0:
        handed = queue.Queue()
        threading.Thread(target=lambda: (_write(path), handed.put("done")), daemon=True).start()
        handed.get(timeout=10)
    dist.barrier()
    return _read(path) if dist.get_rank() == 1 else ""


def test_a_write_handed_over_through_a_queue_is_ordered(tmp_path):
    run = bl.run(save_in_a_thread_then_queue, 2, args=(str(tmp_path),), timeout=10)
    assert run.ok, run
    assert run.races() == [], run.races()
