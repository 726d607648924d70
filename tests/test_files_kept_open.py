"""Files kept open across a synchronising call (attack15 a03, a11): Python records no write, read or close, so an
access through a file object opened before a barrier and used after it was taken at its open. The recorder now
looks, as each synchronising call returns, at which of the learner's files are still open (``/proc/self/fd``) and
whether anything was read through them yet; the ordering model takes the access from the open (a read that had
read nothing, from that mark) to the last call it was seen open past."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises import nb01

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")


def write_kept_open_past_the_barrier(path):
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            dist.barrier()  # the file exists, but its words are written after this returns
            time.sleep(0.2)
            f.write("<pad> <unk> the")
    else:
        dist.barrier()
        time.sleep(0.5)  # only this sleep lets the readers see the words
    with open(path) as f:
        return f.read()


@pytest.mark.parametrize("through_a_link", [False, True])
def test_bytes_written_after_the_barrier_through_a_file_opened_before_it_race(tmp_path, through_a_link):
    folder = tmp_path / "data"
    folder.mkdir()
    if through_a_link:  # the descriptor names the real path: the recorder resolves the link to find it
        (tmp_path / "link").symlink_to(folder)
        folder = tmp_path / "link"
    run = bl.run(write_kept_open_past_the_barrier, 3, args=(str(folder / "vocab.txt"),), live=False)
    assert run.ok and run.values == ["<pad> <unk> the"] * 3  # right by timing alone
    races = run.races()
    assert {(r.first.rank, r.second.rank) for r in races} == {(0, 1), (0, 2)}
    assert "kept open past a call" in str(races[0]) and "close it before that call" in str(races[0])


def open_before_read_after(path):
    if dist.get_rank() == 0:
        with open(path, "a") as f:
            f.write("step 1 done\n")
        dist.barrier()
        return None
    with open(path) as f:  # opened early, read once the barrier says the append is complete
        dist.barrier()
        return f.read()


def test_a_file_opened_before_the_barrier_and_read_after_it_is_read_after_it(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("header\n")
    run = bl.run(open_before_read_after, 3, args=(str(path),), live=False)
    assert run.values[1:] == ["header\nstep 1 done\n"] * 2
    assert not run.races()


def read_then_barrier_inside_the_with(path):
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            json.dump({"lr": 0.1}, f)
        dist.barrier()
        return None
    time.sleep(0.3)  # late enough to find the file, by timing only
    with open(path) as f:
        config = json.load(f)  # read before the barrier: nothing orders it after rank 0's write
        dist.barrier()
    return config


def test_a_read_made_before_the_barrier_through_a_file_kept_open_still_races(tmp_path):
    run = bl.run(read_then_barrier_inside_the_with, 2, args=(str(tmp_path / "config.json"),), live=False)
    assert run.ok and run.values[1] == {"lr": 0.1}
    assert [(r.first.rank, r.second.rank) for r in run.races()] == [(0, 1)]


def log_kept_open_and_closed_file_ordered(folder):
    rank = dist.get_rank()
    log = open(os.path.join(folder, f"log{rank}.txt"), "a")  # each rank's own log, open all along
    if rank == 0:
        with open(os.path.join(folder, "data.txt"), "w") as f:
            f.write("ready")
    for step in range(3):
        dist.barrier()
        log.write(f"step {step}\n")
    log.close()
    with open(os.path.join(folder, "data.txt")) as f:
        return f.read()


def test_files_closed_before_the_barrier_and_logs_nobody_else_reads_are_not_races(tmp_path):
    run = bl.run(log_kept_open_and_closed_file_ordered, 3, args=(str(tmp_path),), live=False)
    assert run.values == ["ready"] * 3
    assert not run.races()
    held = [e for e in run[1].events if e.kind == "file" and e.name == "held"]
    assert [os.path.basename(e.path) for e in held] == ["log1.txt"]  # seen open past the barriers, then closed


def build_then_release_early(folder, build_seconds):
    """attack15 a03's wrong answer: the file is created before the barrier, its words written after it."""
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.txt")
    if rank == 0:
        with bl.span("build", kind="io"), open(path, "w") as f:
            dist.barrier()
            time.sleep(build_seconds)
            f.write("<pad> <unk> the a of")
    else:
        dist.barrier()
        time.sleep(build_seconds + 0.4)
    with bl.span("read", kind="io"), open(path) as f:
        return f.read().split()


def test_the_vocabulary_check_refuses_a_write_that_lands_after_the_barrier():
    verdict = nb01.check_vocab(build_then_release_early, quiet=True, seed=5)
    assert not verdict and "kept open past a call" in verdict.message


def many_descriptor_files_then_one_kept_open(folder, path):
    if dist.get_rank() == 0:
        for i in range(300):  # os.open: no file object to tell when each was closed
            os.close(os.open(os.path.join(folder, f"shard{i}"), os.O_WRONLY | os.O_CREAT, 0o600))
        with open(path, "w") as f:
            dist.barrier()
            time.sleep(0.2)
            f.write("<pad> <unk> the")
    else:
        dist.barrier()
        time.sleep(0.5)
    with open(path) as f:
        return f.read()


def test_a_file_kept_open_is_followed_after_hundreds_of_descriptor_files_closed_before_any_call(tmp_path):
    """The recorder follows at most record._OPENED_KEPT files: when full, those closed before any synchronising
    call saw them open are dropped, descriptor ones (``os.open``) too, looked up in ``/proc/self/fd`` (before,
    300 of them filled the table for good and the file kept open past the barrier was taken at its open)."""
    run = bl.run(
        many_descriptor_files_then_one_kept_open, 2, args=(str(tmp_path), str(tmp_path / "vocab.txt")), live=False
    )
    assert run.ok and run.values == ["<pad> <unk> the"] * 2
    assert {(r.first.rank, r.second.rank) for r in run.races()} == {(0, 1)}


def written_between_two_barriers(path, read_between):
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            dist.barrier()
            f.write("step 1 done\n")
            f.flush()  # in the file before the second barrier; closed only after it, nothing more written
            dist.barrier()
        return None
    dist.barrier()
    if read_between:
        time.sleep(0.3)
        with open(path) as f:
            text = f.read()
        dist.barrier()
        return text
    dist.barrier()
    with open(path) as f:
        return f.read()


@pytest.mark.parametrize("read_between", [False, True])
def test_a_file_written_only_before_the_last_barrier_it_was_kept_open_past_ends_there(tmp_path, read_between):
    """attack17 a05: a file opened only for writing is compared (inode, size, modification time) at each
    synchronising call it is kept open past: written after the first barrier, flushed, closed after the second
    with nothing written in between, the write ends before the second barrier — a read after it is ordered, a
    read between the two is not."""
    run = bl.run(written_between_two_barriers, 2, args=(str(tmp_path / "log.txt"), read_between), live=False)
    assert run.ok and run.values[1] == "step 1 done\n"
    pairs = {(r.first.rank, r.second.rank) for r in run.races()}
    assert pairs == ({(0, 1)} if read_between else set())


def read_whole_then_keep_open(path, after):
    """attack18 a13 and its twins: rank 1 reads ``data.bin`` (whole, or its first bytes of a big file) and keeps
    the file object open across a barrier; after it, rank 0 rewrites or appends to the file, and rank 1 reads
    what is left through the same object."""
    rank = dist.get_rank()
    if rank == 0:
        with open(path, "wb") as f:
            f.write(b"a" * (1 << 20 if after == "read the rest" else 100))
    dist.barrier()
    handle = open(path, "rb") if rank == 1 else None
    first = handle.read(100 if after == "read the rest" else -1) if handle else b""
    dist.barrier()
    if rank == 0:
        time.sleep(0.2)
        with open(path, "wb" if after == "rewritten" else "ab") as f:
            f.write(b"b" * 100)
        return 0
    time.sleep(0.5)  # after rank 0's write, by timing only
    rest = handle.read()  # nothing (a13), the appended bytes, or the rest of the big file
    handle.close()
    return len(first) + len(rest)


@pytest.mark.parametrize(
    ("after", "racing"),
    [("rewritten", False), ("appended", True), ("read the rest", True)],
)
def test_a_file_read_to_its_end_before_the_barrier_and_closed_after_it_is_not_read_after_it(tmp_path, after, racing):
    """The descriptor's offset says which bytes were taken from the file: one read to its end before the barrier
    and closed after it read nothing after it, unless the file grew past that offset (an append) or the read was
    not at the end (a big file read in part): those still race rank 0's write after the barrier."""
    run = bl.run(read_whole_then_keep_open, 2, args=(str(tmp_path / "data.bin"), after), live=False)
    assert run.ok, run
    expected = {"rewritten": 100, "appended": 200, "read the rest": (1 << 20) + 100}[after]
    assert run.values == [0, expected]
    races = run.races()
    assert bool(races) is racing, races
    if racing:
        assert "kept open past a call" in str(races[0]), races[0]
