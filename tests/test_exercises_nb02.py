"""Notebook 02's check: an atomic save passes; the likely wrong fixes fail (real runs, rank 0 killed by RLIMIT_FSIZE)."""

from __future__ import annotations

import io
import os
import pathlib
import shutil
import tempfile
import time

import pytest
import torch
import torch.distributed as dist

from barrierlab.exercises import nb02


def unsolved(obj, path):
    torch.save(obj, path)


def solution(obj, path):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def with_mkstemp(obj, path):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def with_os_rename(obj, path):
    tmp = os.path.join(os.path.dirname(path), ".checkpoint.partial")
    torch.save(obj, tmp)  # torch.save to a path closes (and so flushes) the file before it returns
    os.rename(tmp, path)


def with_named_temporary_file(obj, path):
    with tempfile.NamedTemporaryFile(dir=os.path.dirname(path), delete=False) as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(f.name, path)


def with_shutil_move(obj, path):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
    shutil.move(tmp, path)  # same directory: an os.rename


def with_pathlib(obj, path):
    tmp = pathlib.Path(path).with_suffix(".tmp")
    with tmp.open("wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def copy_into_place(obj, path):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
    shutil.copyfile(tmp, path)  # not atomic: a kill mid-copy leaves half a file


def temporary_in_tmp(obj, path):  # review8a: works on one file system; across two the rename fails (EXDEV)
    fd, tmp = tempfile.mkstemp(dir=tempfile.gettempdir(), prefix="nb02-wrong-")
    with os.fdopen(fd, "wb") as f:
        torch.save(obj, f)
    os.replace(tmp, path)


def replace_before_closing(obj, path):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    data = buffer.getvalue()
    tmp = path + ".tmp"
    f = open(tmp, "wb")
    for i in range(0, len(data), 1000):
        f.write(data[i : i + 1000])  # small writes: the last ones wait in Python's buffer
    os.replace(tmp, path)  # renamed before the end of the file reached it
    f.close()


def sleep_first(obj, path):
    time.sleep(0.3)
    torch.save(obj, path)


def buffer_then_write(obj, path):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    with open(path, "wb") as f:
        f.write(buffer.getvalue())


def barrier_inside(obj, path):  # rank 0 alone calls save: this barrier pairs with the others' barrier
    dist.barrier()
    solution(obj, path)


def all_reduce_inside(obj, path):
    dist.all_reduce(torch.zeros(1))
    solution(obj, path)


def remove_then_rename(obj, path):  # review 14a: accepted, though a crash between the two leaves no checkpoint
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    if os.path.exists(path):
        os.remove(path)
    os.rename(tmp, path)


def old_one_renamed_away_first(obj, path):  # a backup taken by moving the old checkpoint: the same window
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
    if os.path.exists(path):
        os.replace(path, path + ".bak")
    os.replace(tmp, path)


def saves_nothing(obj, path):  # "removing the failing rank's work"
    pass


RIGHT = [solution, with_mkstemp, with_os_rename, with_named_temporary_file, with_shutil_move, with_pathlib]
WRONG = [
    (unsolved, "left partial|in place"),
    (sleep_first, "left partial|in place"),
    (buffer_then_write, "left partial|in place"),
    (copy_into_place, "in place"),
    (temporary_in_tmp, "not in checkpoint.pt's directory"),
    (replace_before_closing, "still in Python's buffer|left partial"),
    (barrier_inside, "not every rank loaded step 2"),
    (all_reduce_inside, "was not killed"),
    (saves_nothing, "was not killed"),
    (remove_then_rename, "removed the old checkpoint.pt"),
    (old_one_renamed_away_first, "renamed away the old checkpoint.pt"),
]


@pytest.mark.parametrize("fn", RIGHT)
def test_atomic_saves_pass(fn, capsys):
    assert nb02.check_save_atomically(fn, seed=1)
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize("fn, says", WRONG)
def test_wrong_fixes_fail(fn, says, capsys):
    result = nb02.check_save_atomically(fn, seed=2)
    out = capsys.readouterr().out
    assert not result and out.startswith("✗"), out
    assert any(option in out for option in says.split("|")), out
