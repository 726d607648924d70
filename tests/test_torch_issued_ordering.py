"""Collectives torch issues for the learner order file accesses too (attack16): a functional collective
(``torch.distributed._functional_collectives``) is recorded as an async call whose ``wait_tensor`` is its wait,
and DDP's gradient all_reduce, seen only in torch's flight record, orders what each rank did before issuing it
before what every rank does once ``backward()`` returned. Each correct program here must have no race, each
wrong twin its race. A DeviceMesh built with other shapes on one rank is a mismatch, not a slow rank."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.distributed.device_mesh import init_device_mesh
from torch.nn.parallel import DistributedDataParallel as DDP

import barrierlab as bl


def _write_or_wait(path, early: bool):
    if dist.get_rank() == 0 and early:
        with open(path, "w") as f:
            f.write("hello")
    else:
        time.sleep(0.3)


def _read(path):
    with open(path) as f:
        return f.read()


def funcol_ordered(path, wait: str):
    _write_or_wait(path, early=True)
    reduced = funcol.all_reduce(torch.ones(2), "sum", dist.group.WORLD)
    if wait == "explicit":
        funcol.wait_tensor(reduced)
        total = None
    else:
        total = reduced.sum().item()  # the first use waits
    return _read(path) if dist.get_rank() else total


def funcol_read_before_the_wait(path):
    _write_or_wait(path, early=True)
    reduced = funcol.all_reduce(torch.ones(2), "sum", dist.group.WORLD)
    text = _read(path) if dist.get_rank() else None  # before the wait: nothing ordered it yet
    funcol.wait_tensor(reduced)
    return text


def test_a_functional_all_reduce_orders_the_write_before_the_read_once_waited(tmp_path):
    for wait in ("explicit", "first use"):
        run = bl.run(funcol_ordered, 3, args=(str(tmp_path / f"{wait}.txt"), wait), timeout=20)
        assert run.ok and run.values[1:] == ["hello", "hello"], run
        assert not run.races(), (wait, run.races())
        waits = [e for e in run[1].events if e.kind == "wait" and e.name == "wait_tensor"]
        assert len(waits) == 1


def test_a_read_before_the_functional_collectives_wait_races(tmp_path):
    run = bl.run(funcol_read_before_the_wait, 2, args=(str(tmp_path / "data.txt"),), timeout=20)
    assert run.ok and run.values[1] == "hello"
    assert [(r.first.rank, r.second.rank) for r in run.races()] == [(0, 1)]


def ddp_step_between(path, write_first: bool):
    model = DDP(torch.nn.Linear(2, 1))
    _write_or_wait(path, early=write_first)
    model(torch.ones(3, 2)).sum().backward()  # DDP's gradient all_reduce: every rank waits for every rank
    if dist.get_rank() == 0 and not write_first:
        with open(path, "w") as f:  # after the step: nothing orders it before the others' reads
            f.write("hello")
        return None
    if dist.get_rank() == 0:
        return None
    time.sleep(0.0 if write_first else 0.5)
    return _read(path)


def test_ddps_gradient_all_reduce_orders_what_came_before_the_step_and_nothing_after_it(tmp_path):
    ordered = bl.run(ddp_step_between, 2, args=(str(tmp_path / "a.txt"), True), timeout=20)
    assert ordered.ok and ordered.values[1] == "hello"
    assert not ordered.races()
    racing = bl.run(ddp_step_between, 2, args=(str(tmp_path / "b.txt"), False), timeout=20)
    assert racing.ok and racing.values[1] == "hello"
    assert [(r.first.rank, r.second.rank) for r in racing.races()] == [(0, 1)]


def meshes_of_other_shapes():
    shape = (2, 2) if dist.get_rank() == 0 else (4,)
    mesh = init_device_mesh("cpu", shape, mesh_dim_names=("dp", "tp")[: len(shape)])
    dist.all_reduce(torch.ones(1), group=mesh.get_group("dp"))


def test_a_mesh_of_another_shape_on_one_rank_is_a_mismatch():
    run = bl.run(meshes_of_other_shapes, 4, timeout=3, deadline=20)
    assert run.diagnosis.kind == "mismatched-collectives", run.diagnosis
    assert "rank 0's new_group" in run.diagnosis.headline


def funcol_on_rank0_only():
    if dist.get_rank() == 0:
        funcol.wait_tensor(funcol.all_reduce(torch.ones(2), "sum", dist.group.WORLD))
    dist.barrier()


def test_a_functional_collective_is_the_learners_call_in_the_diagnosis_and_the_ledger():
    run = bl.run(funcol_on_rank0_only, 2, timeout=3, deadline=20)
    assert run.diagnosis.kind == "mismatched-collectives", run.diagnosis
    assert "rank 0's all_reduce" in run.diagnosis.headline and "rank 1's barrier" in run.diagnosis.headline
    first = run.ledger().splitlines()[1]
    assert first.split()[:2] == ["1", "all_reduce"] and "·" not in first, run.ledger()
