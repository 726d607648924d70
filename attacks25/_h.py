"""Shared helpers for attack25: run a learner program under `barrierlab run`, under bl.run (init=False) and
under plain torchrun, each in a temporary working folder, with deadlines, killing only what they started."""

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
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run(cmd, timeout=100, cwd=None, stdin=subprocess.DEVNULL, input=None, **kw):
    """Run cmd in its own session; on timeout kill its whole group. Returns (rc, out, err); rc None on timeout."""
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.PIPE if input is not None else stdin,
        text=True,
        start_new_session=True,
        cwd=cwd,
        env=kw.pop("env", None) or env(),
        **kw,
    )
    try:
        out, err = p.communicate(input=input, timeout=timeout)
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
        self.path = tempfile.mkdtemp(prefix="a25-")
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)


def cli(program, n=4, timeout=3, extra=(), cwd=None, wall=100):
    return run(
        [PY, "-m", "barrierlab", "run", str(LEARNER / program), "-n", str(n), "--timeout", str(timeout), *extra],
        timeout=wall,
        cwd=cwd,
    )


BLRUN = r"""
import importlib.util, sys
import barrierlab as bl
spec = importlib.util.spec_from_file_location("learner_prog", sys.argv[1])
mod = importlib.util.module_from_spec(spec); sys.modules["learner_prog"] = mod; spec.loader.exec_module(mod)
def entry(rank):
    return mod.main()
run = bl.run(entry, int(sys.argv[2]), init=False, timeout=float(sys.argv[3]), live=False)
print(repr(run))
print("=====DIAGNOSIS")
print(run.diagnosis)
print("=====LEDGER")
print(run.ledger())
"""


def blrun(program, n=4, timeout=3, cwd=None, wall=100):
    """bl.run(main, n, init=False) as the reference says tutorial code is run; returns (rc, out, err)."""
    return run([PY, "-c", BLRUN, str(LEARNER / program), str(n), str(timeout)], timeout=wall, cwd=cwd)


def diagnosis_text(out: str) -> str:
    """The diagnosis part of `barrierlab run`'s output (after the last rank's output)."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if (
            line
            and not line.startswith((" ", "[rank", "---", "Run(", "Traceback", "frame", "<omitting"))
            and ("collective" in line or "rank" in line)
        ):
            if i > 0 and lines[i - 1] == "":
                return "\n".join(lines[i:])
    return out


def verdict(broken: list[str]) -> None:
    if broken:
        print("BROKEN:")
        for b in broken:
            print(" -", b)
        sys.exit(1)
    print("HELD")
    sys.exit(0)
