"""Shared helpers for attacks19 repros: run a script with plain python and with `barrierlab run`."""

import os
import subprocess
import sys

PY = sys.executable
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = SRC + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def plain(script, *args, cwd):
    """`python script args` as a user runs it (what each torchrun worker runs)."""
    return subprocess.run([PY, script, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env())


def barrierlab_run(script, n, *args, cwd, extra=()):
    cmd = [PY, "-m", "barrierlab", "run", script, "-n", str(n), *extra]
    if args:
        cmd += ["--", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=200, env=env())
