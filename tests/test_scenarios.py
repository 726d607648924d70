"""Every lesson scenario is a module that barrierlab.run and torchrun can both run, with the same outcome."""

from __future__ import annotations

import importlib
import inspect

import pytest
from test_torchrun import torchrun

import barrierlab as bl
from barrierlab.scenarios import available, load, parse_kwargs

NAMES = sorted(available())


def test_there_is_a_scenario_for_every_lesson():
    assert len(NAMES) >= 25
    for topic in (
        "barrier_on_rank0",
        "checkpoint_save_then_load",
        "rank0_prepares_data",
        "straggler",
        "uneven_data",
        "extra_barrier",
        "ddp_step",
        "race_shared_file",
    ):
        assert topic in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_scenario_module_follows_the_convention(name):
    module = importlib.import_module(f"barrierlab.scenarios.{name}")
    assert module.__doc__ and module.__doc__.strip(), "the first docstring line is what `barrierlab list` shows"
    parameters = inspect.signature(module.scenario).parameters.values()
    assert all(p.default is not inspect.Parameter.empty for p in parameters), "torchrun passes only key=value"
    source = inspect.getsource(module)
    assert 'if __name__ == "__main__":\n    torchrun_main(scenario)' in source


#: Scenarios whose ranks return the moment a group is made: as notebook 00 runs them, with linger=True, so that a
#: rank that returned first does not exit while a peer is still connecting its sockets (CI at load: "Gloo
#: connectFullMesh failed with Connection closed by peer" on group_creation_rendezvous, once).
LINGER = {"group_creation_rendezvous"}


@pytest.fixture(scope="module")
def preloaded():
    """The warm process's modules imported first: a run asked for while it still preloads forks ranks that import
    DCP or DDP's torch._dynamo themselves (2 s each), and at load 14 four of them outlasted an 8 s deadline in CI;
    these tests are about the scenarios, not about that race (tests/test_warm_start.py is)."""
    bl.warm_up(wait=True)


@pytest.mark.parametrize("name", NAMES)
def test_scenario_runs_with_its_defaults_within_the_deadline(name, no_leftovers, preloaded):
    run = bl.run(load(name), 4, timeout=2, deadline=8, linger=name in LINGER)
    assert not run.hit_deadline, run


def test_key_value_arguments_are_python_literals():
    assert parse_kwargs(["steps=3", "slow_rank='rotate'", "delay=0.2", "name=abc"]) == {
        "steps": 3,
        "slow_rank": "rotate",
        "delay": 0.2,
        "name": "abc",
    }


@pytest.mark.parametrize(
    "name, nproc, kwargs",
    [
        ("staggered_arrival", 4, []),
        ("checkpoint_save_then_load", 2, []),
        ("uneven_data", 4, []),
    ],
)
def test_torchrun_and_barrierlab_run_agree_on_the_outcome(name, nproc, kwargs, tmp_path):
    expected_ok = bl.run(load(name), nproc, kwargs=parse_kwargs(kwargs), timeout=2).ok
    # torchrun's workers leave init_process_group at their own moments: on a loaded CI the first to reach
    # staggered_arrival's barrier waited more than 2 s for the others and timed out; a passing scenario gets 10 s
    done = torchrun(name, nproc, tmp_path, *kwargs, timeout=10.0 if expected_ok else 2.0)
    assert (done.returncode == 0) == expected_ok, done.stderr[-3000:]


@pytest.mark.parametrize(("numel", "at_once"), [(1, [2]), (1024, [0, 2])])
def test_which_survivors_fail_at_once_depends_on_the_all_reduces_length(numel, at_once):
    """Notebook 04's "On your own" asks whether the answer changes for 1,024 elements with rank 3 crashing:
    it does (the scenario's docstring). A survivor that fails at once leaves in far less than the timeout."""
    from barrierlab.scenarios import rank_exits_mid_job

    timeout = 3
    run = bl.run(
        rank_exits_mid_job.scenario, 4, kwargs={"crashing_rank": 3, "numel": numel}, timeout=timeout, linger=True
    )
    left = {e.rank: e.duration for e in run.events if e.is_collective}
    assert sorted(left) == [0, 1, 2], left
    assert sorted(r for r, d in left.items() if d < timeout / 2) == at_once, left
