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
    unless it exits 0."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
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
