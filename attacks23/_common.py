"""Shared helpers for attacks23: run python code with barrierlab from this tree, and check for leftover processes."""

import os
import subprocess
import sys

PY = sys.executable
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")


def env(**extra):
    e = dict(os.environ)
    e["PYTHONPATH"] = SRC + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.update(extra)
    return e


def python(code, *, cwd=None, timeout=110, **extra):
    """Run ``code`` in a fresh interpreter (its own kernel-like process): (returncode, stdout, stderr)."""
    p = subprocess.run([PY, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env(**extra))
    return p.returncode, p.stdout, p.stderr


def cli(*args, cwd=None, timeout=110):
    p = subprocess.run(
        [PY, "-m", "barrierlab", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env()
    )
    return p.returncode, p.stdout, p.stderr
