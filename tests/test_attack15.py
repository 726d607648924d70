"""attack15's repros (``attacks15/``: a new attacker given the README, the docs and the source, pointed at the
exercise checks, scale, the script runner, resource limits and subgroups). Those fixed are run here: each exited 1
before its fix. Repros that compare with plain torchrun (whose store listens beyond loopback) are checked here on
barrierlab's side alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from repros import fixed_attacks

ROOT = Path(__file__).resolve().parent.parent
ATTACKS = ROOT / "attacks15"

FIXED = [
    "a01_cut_record_false_race",
    "a06_subgroup_mismatch_diagnosis",
    "a02_check_trusts_spans_not_accesses",
    "a08_check_parameters_unvalidated",
    "a09_lint_match_wildcard",
    "a07_races_unbounded",
    "a10_timeline_handoffs_unbounded",
    "a13_ledger_drops_monitored_barrier",
    "a03_write_after_barrier_through_open_file",
    "a11_read_through_file_opened_before_barrier",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)


def barrierlab_run(target: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BARRIERLAB_LIVE": "0"}
    command = [sys.executable, "-m", "barrierlab", "run", str(target), "-n", "2"]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=200, env=env, cwd=cwd, stdin=subprocess.DEVNULL
    )


ENDS_WITH_OS_EXIT = """\
import os, sys
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
sys.stdout.flush()
os._exit(CODE)
"""


@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.parametrize("code, status", [(0, 0), (3, 1)])
def test_a_script_that_ends_with_os_exit_ends_as_under_torchrun(tmp_path, code, status):
    """a04: `os._exit(0)` at a script's end (to skip the interpreter's teardown) passes under torchrun; every rank
    was reported "did not finish" and the command exited 1."""
    script = tmp_path / "train.py"
    script.write_text(ENDS_WITH_OS_EXIT.replace("CODE", str(code)))
    done = barrierlab_run(script, tmp_path)
    assert done.returncode == status, done.stdout + done.stderr
    if code == 0:
        assert "2 finished" in done.stdout, done.stdout
    else:
        assert "exited with code 3" in done.stdout, done.stdout


@pytest.mark.usefixtures("no_leftovers")
def test_a_folder_with_a_main_runs_as_python_and_torchrun_run_it(tmp_path):
    """a12: `python appdir` and torchrun run a folder's __main__.py; barrierlab run refused it."""
    app = tmp_path / "appdir"
    app.mkdir()
    (app / "__main__.py").write_text(
        'import torch.distributed as dist\ndist.init_process_group("gloo")\ndist.barrier()\n'
    )
    done = barrierlab_run(app, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def append_and_read_a_shared_log(folder: str, n: int) -> int:
    import torch.distributed as dist

    path = os.path.join(folder, "log.txt")
    for i in range(n):
        with open(path, "a") as f:
            f.write(f"{dist.get_rank()} {i}\n")
        with open(path) as f:
            f.read()
    return dist.get_rank()


@pytest.mark.usefixtures("no_leftovers")
def test_a_run_with_more_races_than_the_cap_lists_the_cap_and_says_at_least(tmp_path):
    """a07/a10: 8 ranks appending to and reading one log made millions of races and minutes of diagnosis."""
    import barrierlab as bl
    from barrierlab.ordering import MAX_RACES

    run = bl.run(append_and_read_a_shared_log, 4, args=(str(tmp_path), 120), timeout=30, live=False)
    races = run.races()
    assert len(races) == MAX_RACES and races.cut, len(races)
    assert f"at least {MAX_RACES} pairs of file accesses raced" in run.diagnosis.headline
    assert f"run.races() lists the first {MAX_RACES}" in str(run.diagnosis)


LOWERS_NOFILE = """\
import os, resource
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
rank = dist.get_rank()
dist.destroy_process_group()
if rank == 1:  # a final phase that must open no new file
    free = os.open(os.devnull, os.O_RDONLY)
    os.close(free)
    resource.setrlimit(resource.RLIMIT_NOFILE, (free, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
print("rank", rank, "done", flush=True)
"""


@pytest.mark.usefixtures("no_leftovers")
def test_a_script_that_lowers_its_open_file_limit_at_its_end_still_reports(tmp_path):
    """a05: torchrun passes it; the rank was 'exited with code 74: could not write this rank's outcome'."""
    script = tmp_path / "train.py"
    script.write_text(LOWERS_NOFILE)
    done = barrierlab_run(script, tmp_path)
    assert done.returncode == 0 and "2 finished" in done.stdout, done.stdout + done.stderr
