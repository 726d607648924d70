"""Shared helpers for attack27: run a learner program under `barrierlab run` (and a script under bl.run) in a
temporary working folder, with deadlines, killing only the process groups they started."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
SRC = TREE / "src"
PY = sys.executable
LEARNER = HERE / "learner"


def env(**extra):
    e = dict(os.environ)
    e["PYTHONPATH"] = str(SRC) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.pop("BARRIERLAB_RECORD_DIR", None)
    e["BARRIERLAB_LIVE"] = "0"
    e["MPLBACKEND"] = "Agg"
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run(cmd, timeout=100, cwd=None, **kw):
    """Run cmd in its own session; on timeout kill its whole group. Returns (rc, out, err); rc None on timeout."""
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        cwd=cwd,
        env=kw.pop("env", None) or env(),
        **kw,
    )
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # anything the command left in its session
        except ProcessLookupError:
            pass
    return p.returncode, out, err


class Workdir:
    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="a27-")
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)


def cli(program, n=4, timeout=3, extra=(), cwd=None, wall=100, args=()):
    cmd = [PY, "-m", "barrierlab", "run", str(LEARNER / program), "-n", str(n), "--timeout", str(timeout), *extra]
    if args:
        cmd += ["--", *args]
    return run(cmd, timeout=wall, cwd=cwd)


def section(text: str, start: str) -> str:
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith(start):
            return "\n".join(lines[i:])
    return ""


def verdict(broken: list[str]) -> None:
    if broken:
        print("BROKEN:")
        for b in broken:
            print(" -", b)
        sys.exit(1)
    print("HELD")
    sys.exit(0)
