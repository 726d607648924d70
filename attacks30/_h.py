"""Shared helper for attacks30: run a driver program in a session of its own, under a deadline, in a temporary
folder that is removed afterwards, with a marker variable in its environment; then find (and kill) any process
still carrying the marker. Nothing is ever killed by name."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
PY = "/work/main/.venv/bin/python"
if SRC not in sys.path:
    sys.path.insert(0, SRC)
MARK = "ATTACK30_MARK"


def marked(token: str) -> list[int]:
    """PIDs whose /proc/PID/environ carries MARK=token (never our own)."""
    needle = f"{MARK}={token}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            pass
    return found


def describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:120]
        with open(f"/proc/{pid}/comm", "rb") as f:
            comm = f.read().strip().decode(errors="replace")
        return f"pid {pid} comm={comm} cmd={cmd!r}"
    except OSError:
        return f"pid {pid} (gone)"


def kill_marked(token: str) -> list[str]:
    """Describe, then SIGKILL, every process carrying our marker (only those)."""
    seen = []
    for _ in range(5):
        pids = marked(token)
        if not pids:
            break
        for pid in pids:
            seen.append(describe(pid))
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)
    return seen


class Result:
    def __init__(self, rc, out, err, elapsed, leftovers, leftover_files):
        self.rc, self.out, self.err, self.elapsed = rc, out, err, elapsed
        self.leftovers, self.leftover_files = leftovers, leftover_files

    def show(self, limit: int = 3000) -> None:
        print(f"--- driver rc={self.rc} elapsed={self.elapsed:.2f}s")
        print("--- stdout:\n" + self.out[-limit:])
        if self.err.strip():
            print("--- stderr (tail):\n" + self.err[-limit:])
        if self.leftovers:
            print("--- processes left carrying the marker:", *self.leftovers, sep="\n  ")
        if self.leftover_files:
            print("--- files left in the driver's TMPDIR:", *self.leftover_files[:20], sep="\n  ")


def run_driver(
    code: str,
    *,
    timeout: float = 120,
    files: dict[str, str] | None = None,
    argv: list[str] | None = None,
    env: dict[str, str] | None = None,
    settle: float = 1.0,
    check_after=None,
) -> Result:
    """Run ``code`` as driver.py (or ``argv``) in a fresh temporary folder. TMPDIR points inside that folder, so
    barrierlab's run folders land there and can be checked. ``check_after(folder)`` runs before the folder is
    removed (while leftovers still exist)."""
    token = uuid.uuid4().hex
    folder = tempfile.mkdtemp(prefix="attack30-")
    tmp = os.path.join(folder, "tmp")
    os.mkdir(tmp)
    try:
        with open(os.path.join(folder, "driver.py"), "w") as f:
            f.write(textwrap.dedent(code))
        for name, text in (files or {}).items():
            path = os.path.join(folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(textwrap.dedent(text))
        environ = dict(os.environ)
        environ.update({MARK: token, "PYTHONPATH": SRC, "TMPDIR": tmp, "BARRIERLAB_LIVE": "0", "PYTHONUNBUFFERED": "1"})
        environ.update(env or {})
        command = ["timeout", "-s", "KILL", str(timeout)] + (argv or [PY, "driver.py"])
        start = time.monotonic()
        proc = subprocess.run(
            command, cwd=folder, env=environ, capture_output=True, text=True, start_new_session=True, errors="replace"
        )
        elapsed = time.monotonic() - start
        time.sleep(settle)
        extra = check_after(folder) if check_after else None
        leftovers = kill_marked(token)
        left_files = []
        for dirpath, dirnames, filenames in os.walk(tmp):
            for n in [x for x in dirnames + filenames if "barrierlab" in x]:
                left_files.append(os.path.join(dirpath, n))
        result = Result(proc.returncode, proc.stdout, proc.stderr, elapsed, leftovers, left_files)
        result.extra = extra
        result.folder = folder
        return result
    finally:
        kill_marked(token)
        shutil.rmtree(folder, ignore_errors=True)


def verdict(broken: bool, text: str) -> None:
    print(("BROKEN: " if broken else "HELD: ") + text)
    sys.exit(1 if broken else 0)
