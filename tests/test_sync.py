"""main_process_first: the main process runs the body first, the others after it, and a failure reaches everyone."""

from __future__ import annotations

import os
import time

import pytest
import torch.distributed as dist

import barrierlab as bl
from barrierlab.sync import main_process_first


def prepare_then_read(folder: str, fail: bool = False):
    rank = dist.get_rank()
    path = os.path.join(folder, "data.txt")
    with main_process_first() as is_main:
        if is_main:
            time.sleep(0.2)  # a slow download: the others must not read before it ends
            if fail:
                raise ValueError("checksum mismatch in data.txt")
            with open(path, "w") as f:
                f.write(f"prepared by rank {rank}")
        with open(path) as f:
            return f.read()


def test_others_read_what_rank0_wrote(tmp_path, no_leftovers):
    run = bl.run(prepare_then_read, 4, args=(str(tmp_path),), timeout=5)
    assert run.ok, run
    assert run.values == ["prepared by rank 0"] * 4


def test_failure_on_rank0_raises_promptly_on_every_rank(tmp_path, no_leftovers):
    run = bl.run(prepare_then_read, 4, args=(str(tmp_path),), kwargs={"fail": True}, timeout=20, linger=True)
    assert run.statuses == ["raised"] * 4
    assert isinstance(run[0].exception, ValueError)  # the main process re-raises its own error
    for r in (1, 2, 3):
        message = str(run[r].exception)
        assert isinstance(run[r].exception, RuntimeError)
        assert "rank 0 failed while preparing (ValueError: checksum mismatch in data.txt)" in message
        assert "see rank 0's traceback" in message
    assert run.elapsed < 10  # nobody waited for the 20 s timeout


def test_body_runs_once_when_not_initialised():
    assert not dist.is_initialized()
    calls = []
    with main_process_first() as is_main:
        calls.append(is_main)
    assert calls == [True]


def test_exception_passes_through_when_not_initialised():
    with pytest.raises(KeyError):
        with main_process_first():
            raise KeyError("x")


def local_first(folder: str):
    rank = dist.get_rank()
    os.environ["LOCAL_RANK"] = str(rank % 2)  # two "machines" of two ranks: ranks 0 and 2 are local mains
    node = rank // 2
    marker = os.path.join(folder, f"node{node}.ready")
    with main_process_first(local=True) as is_main:
        if is_main:
            time.sleep(0.2)
            open(marker, "w").close()
        return is_main, os.path.exists(marker)


def test_local_makes_local_rank0_the_main_process_of_each_machine(tmp_path, no_leftovers):
    run = bl.run(local_first, 4, args=(str(tmp_path),))
    assert run.ok, run
    assert run.values == [(True, True), (False, True), (True, True), (False, True)]


def local_without_local_rank():
    del os.environ["LOCAL_RANK"]
    with main_process_first(local=True):
        pass


def test_local_without_local_rank_names_the_variable(no_leftovers):
    run = bl.run(local_without_local_rank, 2)
    assert run.statuses == ["raised", "raised"]
    assert "LOCAL_RANK" in str(run[0].exception)


def in_a_subgroup(folder: str):
    group = dist.new_group([1, 2, 3])
    rank = dist.get_rank()
    marker = os.path.join(folder, "ready")
    with main_process_first(group=group) as is_main:
        if rank == 1:
            time.sleep(0.2)
            open(marker, "w").close()
        return is_main, os.path.exists(marker)


def test_group_main_is_its_first_member_and_outsiders_do_not_wait(tmp_path, no_leftovers):
    run = bl.run(in_a_subgroup, 4, args=(str(tmp_path),), linger=True)
    assert run.ok, run
    assert run.values[1:] == [(True, True), (False, True), (False, True)]
    assert run.values[0] == (True, False)  # not a member: runs the body at once, waits for no one


def recorded_at_the_with_line():
    with main_process_first():
        pass


def test_recorded_call_site_is_the_learners_with_line(no_leftovers):
    run = bl.run(recorded_at_the_with_line, 2)
    assert run.ok, run
    for r in run:
        calls = [e for e in r.events if e.is_collective]
        assert [e.name for e in calls] == ["all_gather_object"]
        assert calls[0].func == "recorded_at_the_with_line"
        assert calls[0].file.endswith("test_sync.py")
