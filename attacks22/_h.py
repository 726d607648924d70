"""Shared helper for attack22: run a rank function with barrierlab and return its races."""

import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

import barrierlab as bl  # noqa: E402


def races_of(fn, world=2, extra=(), **kw):
    """Run fn(folder, *extra) on `world` ranks in a fresh folder; return (run, races as text list)."""
    d = tempfile.mkdtemp(prefix="a22-")
    try:
        run = bl.run(fn, world, args=(d, *extra), **kw)
        return run, [str(r) for r in run.races()]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def verdict(broken: bool, text: str) -> None:
    print(("BROKEN: " if broken else "HELD: ") + text)
    sys.exit(1 if broken else 0)
