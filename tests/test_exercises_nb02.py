"""Notebook 02's check: an atomic save passes; the likely wrong fixes fail (real runs, rank 0 killed by RLIMIT_FSIZE)."""

from __future__ import annotations

import io
import os
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


def saves_nothing(obj, path):  # "removing the failing rank's work"
    pass


@pytest.mark.parametrize("fn", [solution, with_mkstemp])
def test_atomic_saves_pass(fn, capsys):
    assert nb02.check_save_atomically(fn, seed=1)
    assert capsys.readouterr().out.startswith("✓")


@pytest.mark.parametrize(
    "fn, says",
    [
        (unsolved, "left partial"),
        (sleep_first, "left partial"),
        (buffer_then_write, "left partial"),
        (barrier_inside, "not every rank loaded step 2"),
        (all_reduce_inside, "was not killed"),
        (saves_nothing, "was not killed"),
    ],
)
def test_wrong_fixes_fail(fn, says, capsys):
    result = nb02.check_save_atomically(fn, seed=2)
    out = capsys.readouterr().out
    assert not result and out.startswith("✗"), out
    assert says in out, out
