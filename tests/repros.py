"""Running an attacker's repro script (``attacksNN/aNN_*.py``): it exits 0 when the promise it attacks holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def assert_the_promise_holds(script: Path) -> None:
    """Run ``script`` with this tree's barrierlab (from the repository root, 300 s at most) and fail with its output
    unless it exits 0."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
