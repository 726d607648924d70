"""Notebook 01's check: right fixes pass, the likely wrong ones fail, decided from the record (real runs)."""

from __future__ import annotations

import os
import time

import pytest
import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises import nb01
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


def unsolved(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    dist.barrier()
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    return _read(path)


def barrier_after(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    dist.barrier()
    return _read(path)


def both_barriers(folder, build_seconds):  # right, with a barrier that is not needed
    path = os.path.join(folder, "vocab.txt")
    dist.barrier()
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    dist.barrier()
    return _read(path)


def with_main_process_first(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    with main_process_first() as is_main:
        if is_main:
            _build(path, build_seconds)
        return _read(path)


def blocking_all_reduce(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    dist.all_reduce(torch.zeros(1))
    return _read(path)


def broadcast_from_rank0(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    dist.broadcast(torch.zeros(1), src=0)  # the others cannot leave before rank 0 (the writer) entered
    return _read(path)


def store_key(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    store = dist.distributed_c10d._get_default_store()
    if dist.get_rank() == 0:
        _build(path, build_seconds)
        store.set("vocab ready", "1")
    else:
        store.wait(["vocab ready"])
    return _read(path)


def send_recv_from_rank0(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
        for r in range(1, dist.get_world_size()):
            dist.send(torch.ones(1), dst=r)
    else:
        dist.recv(torch.zeros(1), src=0)
    return _read(path)


def async_barrier_waited(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    work = dist.barrier(async_op=True)
    work.wait()
    return _read(path)


def broadcast_object_of_the_path(folder, build_seconds):
    box = [None]
    if dist.get_rank() == 0:
        box[0] = os.path.join(folder, "vocab.txt")
        _build(box[0], build_seconds)
    dist.broadcast_object_list(box, src=0)
    return _read(box[0])


def sleep_instead(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    dist.barrier()
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    else:
        time.sleep(1)
    return _read(path)


def extra_barrier_before(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    dist.barrier()
    dist.barrier()
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    else:
        time.sleep(0.8)
    return _read(path)


def async_barrier_future_waited(folder, build_seconds):
    """review 14a: a wait through the Work's future was rejected as never waited on."""
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    dist.barrier(async_op=True).get_future().wait()
    return _read(path)


def async_barrier_polled(folder, build_seconds):
    """review 14a: polling work.is_completed() until True was rejected as never waited on."""
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    work = dist.barrier(async_op=True)
    while not work.is_completed():
        time.sleep(0.002)
    return _read(path)


def async_never_waited(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    dist.barrier(async_op=True)
    if dist.get_rank() != 0:
        time.sleep(0.8)
    return _read(path)


def barrier_on_rank0_only(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
        dist.barrier()
    return _read(path)


def polling_for_the_file(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    else:
        while not os.path.exists(path):  # the file appears at open(), before its words are written
            time.sleep(0.01)
        time.sleep(0.05)
    return _read(path)


def store_key_set_before_the_build(folder, build_seconds):
    path = os.path.join(folder, "vocab.txt")
    store = dist.distributed_c10d._get_default_store()
    if dist.get_rank() == 0:
        store.set("vocab ready", "1")  # too early: says "ready" before the build
        _build(path, build_seconds)
    else:
        store.wait(["vocab ready"])
        time.sleep(0.8)
    return _read(path)


def every_rank_builds(folder, build_seconds):  # "removing rank 0's work": no rank-0-first at all
    path = os.path.join(folder, f"vocab{dist.get_rank()}.txt")
    _build(path, build_seconds)
    dist.barrier()
    return _read(path)


def barrier_inside_the_read_span(folder, build_seconds):
    """review15a: the barrier as the first line inside the `read` span still comes before the read."""
    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        _build(path, build_seconds)
    with bl.span("read", kind="io"):
        dist.barrier()
        with open(path) as f:
            return f.read().split()


RIGHT = [
    barrier_after,
    with_main_process_first,
    blocking_all_reduce,
    broadcast_from_rank0,
    store_key,
    send_recv_from_rank0,
    async_barrier_waited,
    async_barrier_future_waited,
    async_barrier_polled,
    broadcast_object_of_the_path,
    barrier_inside_the_read_span,
]
WRONG = [
    (unsolved, "before rank 0 had written it"),
    (sleep_instead, "nothing orders them"),
    (extra_barrier_before, "nothing orders them"),
    (async_never_waited, "never waited on"),
    (barrier_on_rank0_only, "did not finish|before rank 0 had written it"),
    (polling_for_the_file, "nothing orders them|before rank 0 had written it"),
    (store_key_set_before_the_build, "nothing orders them"),
    (every_rank_builds, "rank 0 alone builds"),
]


@pytest.mark.parametrize("fn", RIGHT)
def test_right_fixes_pass(fn, capsys):
    assert nb01.check_vocab(fn, seed=1)
    assert capsys.readouterr().out.startswith("✓")


def test_a_redundant_barrier_passes_with_a_remark(capsys):
    assert nb01.check_vocab(both_barriers, seed=1)
    assert "not needed" in capsys.readouterr().out


@pytest.mark.parametrize("fn, says", WRONG)
def test_wrong_fixes_fail(fn, says, capsys):
    result = nb01.check_vocab(fn, seed=2)
    out = capsys.readouterr().out
    assert not result and out.startswith("✗"), out
    assert any(option in out for option in says.split("|")), out


def test_the_check_leaves_no_folder_in_the_temp_folder(tmp_path, monkeypatch):
    """Each check made a folder per run and left it: 17-19 a day on this machine, from notebook runs alone."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's own temp folder: others' checks run too
    nb01.check_vocab(sleep_instead, seed=2, quiet=True)
    assert not list(tmp_path.glob("barrierlab-vocab-*"))
