"""Running an attacker's repro script (``attacksNN/aNN_*.py``): it exits 0 when the promise it attacks holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def assert_the_promise_holds(script: Path) -> None:
    """Run ``script`` with this tree's barrierlab (from the repository root, 300 s at most) and fail with its output
    unless it exits 0. A repro that fails while the machine is busier than its cores (load average above the core
    count) runs once more, and fails only if it fails again: several repros bound a run's time ("the deadline +
    about 0.5 s"), which a machine running other tests beside them can stretch once (attack23 a08 failed once so
    beside a test run of two workers, and held alone)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

    def attempt():
        return subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT
        )

    done = attempt()
    if done.returncode != 0 and os.getloadavg()[0] > (os.cpu_count() or 1):
        first = done.stdout[-3000:] + done.stderr[-1000:]
        print(f"{script.name} failed at load {os.getloadavg()[0]:.1f}; running it once more:\n{first}", file=sys.stderr)
        done = attempt()
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-3000:]


def fixed_attacks(folder: Path, names: list[str]):
    """The test that runs each of a campaign's fixed repros (``folder/NAME.py`` for each name), for a test module to
    bind as ``test_the_attack_no_longer_breaks_its_promise``."""

    @pytest.mark.slow
    @pytest.mark.usefixtures("no_leftovers")
    @pytest.mark.timeout(400)
    @pytest.mark.parametrize("name", names)
    def test_the_attack_no_longer_breaks_its_promise(name):
        assert_the_promise_holds(folder / f"{name}.py")

    return test_the_attack_no_longer_breaks_its_promise
