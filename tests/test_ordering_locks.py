"""The ordering model on file locks (``fcntl.flock``, what ``filelock.FileLock`` uses on Linux), from real runs:
one rank's hold of a lock is ordered before another rank's later hold of the same file, so the Hugging Face
datasets/transformers cache idiom ("under the lock: build the file if it is not there, else read it") has no
race; an access outside the lock still races (attack11 a25)."""

from __future__ import annotations

import os
import time

import pytest

import barrierlab as bl

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]


def build_or_read_under_a_file_lock(folder: str) -> str:
    """attack11 a25: every rank takes the lock; the first to hold it builds the cached file, the others read it."""
    import torch.distributed as dist
    from filelock import FileLock

    path = os.path.join(folder, "tokenized.txt")
    with FileLock(path + ".lock"):
        if not os.path.exists(path):
            time.sleep(0.1)  # tokenising
            with open(path, "w") as f:
                f.write("1 2 3")
        with open(path) as f:
            data = f.read()
    dist.barrier()
    return data


def test_the_cache_idiom_under_a_file_lock_has_no_race(tmp_path):
    run = bl.run(build_or_read_under_a_file_lock, 3, args=(str(tmp_path),), timeout=10)
    assert run.ok and run.values == ["1 2 3"] * 3, run
    assert run.races() == [], run.races()  # 19-22 races: the lock files' opens, the folder, the cached file
    assert run.diagnosis.kind == "ok", run.diagnosis
    locks = [e for r in run for e in r.events if e.kind == "sync" and e.name == "lock"]
    # (FileLock may first probe the folder with a lock of an unnamed O_TMPFILE file, released by its close)
    held = [e for e in locks if e.path.endswith("tokenized.txt.lock")]
    assert len(held) == 3 and len({e.inode for e in held}) == 1 and {e.value for e in held} == {"exclusive"}, locks


def built_under_the_lock_read_outside_it(folder: str) -> str:
    """Rank 0 builds the file under the lock; rank 1 takes the lock first (and finds nothing to build: it
    leaves that to rank 0), then reads the file later without the lock: the read comes after rank 0's write by
    timing alone."""
    import torch.distributed as dist
    from filelock import FileLock

    path = os.path.join(folder, "tokenized.txt")
    lock = FileLock(path + ".lock")
    if dist.get_rank() == 1:
        with lock:
            pass
        time.sleep(0.5)
        with open(path) as f:
            data = f.read()
    else:
        time.sleep(0.2)
        with lock:
            with open(path, "w") as f:
                f.write("1 2 3")
        data = "1 2 3"
    dist.barrier()
    return data


def test_a_read_outside_the_lock_still_races(tmp_path):
    run = bl.run(built_under_the_lock_read_outside_it, 2, args=(str(tmp_path),), timeout=10)
    assert run.ok and run.values == ["1 2 3"] * 2, run
    races = [r for r in run.races() if r.first.path.endswith("tokenized.txt")]
    assert [(r.first.rank, r.first.how, r.second.rank, r.second.how) for r in races] == [(0, "write", 1, "read")]


def count_under_a_lock_released_by_close(folder: str, unlock: str) -> int:
    """Every rank adds one to a counter file under an ``fcntl.flock``, released by ``LOCK_UN`` or only by closing
    the lock file's descriptor (leaving the ``with`` block), as many scripts do."""
    import fcntl

    import torch.distributed as dist

    path = os.path.join(folder, "count.txt")
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        count = 0
        if os.path.exists(path):
            with open(path) as f:
                count = int(f.read())
        time.sleep(0.05)
        with open(path, "w") as f:
            f.write(str(count + 1))
        if unlock == "LOCK_UN":
            fcntl.flock(lock, fcntl.LOCK_UN)
    dist.barrier()
    with open(path) as f:
        return int(f.read())


@pytest.mark.parametrize("unlock", ["LOCK_UN", "close"])
def test_a_lock_released_by_closing_its_descriptor_orders_the_next_hold(tmp_path, unlock):
    """fix13a's limit: a hold whose release was not recorded ordered nothing, so a lock released by closing its
    file (no ``LOCK_UN``) left every access under it racing."""
    run = bl.run(count_under_a_lock_released_by_close, 3, args=(str(tmp_path), unlock), timeout=10)
    assert run.ok and run.values == [3, 3, 3], run
    assert run.races() == [], [str(r) for r in run.races()]
    unlocks = [e for r in run for e in r.events if e.kind == "sync" and e.name == "unlock"]
    assert len(unlocks) == 3 and {e.call for e in unlocks} == {"close" if unlock == "close" else "fcntl.flock"}


def note_under_a_lock_opened_for_writing(folder: str, read_the_lock_file: bool):
    """attack19 a09: ``with open(lock, "w") as lk: fcntl.flock(lk, LOCK_EX)`` around an append to a shared file,
    then a barrier and rank 0 reads the appends (and, in the other case, what the holders wrote into the lock
    file itself: a truncating open of a file some rank reads can clear a holder's bytes before it is granted)."""
    import fcntl

    import torch.distributed as dist

    rank = dist.get_rank()
    path = os.path.join(folder, "results.csv")
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write(f"held by {rank}\n")
        lock.flush()
        with open(path, "a") as f:
            f.write(f"{rank}\n")
        fcntl.flock(lock, fcntl.LOCK_UN)
    dist.barrier()
    if rank == 0:
        if read_the_lock_file:
            with open(path + ".lock") as f:
                f.read()
        with open(path) as f:
            return sorted(f.read().split())
    return None


@pytest.mark.parametrize("read_the_lock_file", [False, True])
def test_a_lock_file_opened_for_writing_orders_its_holds_unless_someone_reads_it(tmp_path, read_the_lock_file):
    run = bl.run(note_under_a_lock_opened_for_writing, 3, args=(str(tmp_path), read_the_lock_file), timeout=5)
    assert run.ok and run[0].value == ["0", "1", "2"], run
    lock_races = [r for r in run.races() if r.first.path.endswith(".lock") and r.second.path.endswith(".lock")]
    assert bool(lock_races) is read_the_lock_file, lock_races
