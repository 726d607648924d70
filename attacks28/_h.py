"""Shared helpers for attack28: run a driver program (which calls barrierlab) in a session of its own under a
deadline, with a marker in its environment; afterwards find every process still carrying the marker
(/proc/PID/environ or cmdline), which the run (or the driver) started and should have ended."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
SRC = TREE / "src"
PY = sys.executable


def env(**extra):
    e = dict(os.environ)
    e["PYTHONPATH"] = str(SRC) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.pop("BARRIERLAB_RECORD_DIR", None)
    e["BARRIERLAB_LIVE"] = "0"
    e["MPLBACKEND"] = "Agg"
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run(cmd, timeout=100, cwd=None, env_=None, stdin=subprocess.DEVNULL):
    """Run cmd in its own session; on timeout kill its whole group. Returns (rc, out, err, seconds)."""
    t0 = time.monotonic()
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=stdin,
        text=True,
        errors="replace",
        start_new_session=True,
        cwd=cwd,
        env=env_ or env(),
    )
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc = None
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return rc, out, err, time.monotonic() - t0


def marked(token: str) -> list[tuple[int, str]]:
    """Live processes (not zombies) whose environment or command line holds token."""
    found = []
    tok = token.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            if stat.rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                continue
            hit = False
            for part in ("environ", "cmdline"):
                try:
                    with open(f"/proc/{name}/{part}", "rb") as f:
                        if tok in f.read():
                            hit = True
                except OSError:
                    pass
            if hit:
                with open(f"/proc/{name}/comm") as f:
                    found.append((int(name), f.read().strip()))
        except OSError:
            continue
    return found


def kill_marked(token: str) -> None:
    for pid, _ in marked(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


def driver(code: str, timeout=100, extra_env=None, settle=2.0, cwd=None):
    """Run `code` (Python, may use TOKEN and WORK) as a driver program. Returns dict with rc, out, err, seconds,
    left (marked processes alive `settle` s after the driver ended: then killed)."""
    token = "a28mark" + uuid.uuid4().hex[:12]
    work = tempfile.mkdtemp(prefix="a28-")
    path = os.path.join(work, "driver.py")
    with open(path, "w") as f:
        f.write(f"TOKEN = {token!r}\nWORK = {work!r}\n" + textwrap.dedent(code))
    e = env(ATTACK28_MARK=token, **(extra_env or {}))
    try:
        rc, out, err, secs = run([PY, path], timeout=timeout, cwd=cwd or work, env_=e)
        deadline = time.monotonic() + settle
        left = marked(token)
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = marked(token)
        kill_marked(token)
        return {"rc": rc, "out": out, "err": err, "seconds": secs, "left": left, "token": token, "work": work}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def result_line(out: str) -> dict | None:
    """The driver's last line starting with RESULT (json)."""
    for line in reversed(out.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return None


def finish(broken: list[str], summary: str) -> None:
    if broken:
        print("BROKEN:", summary)
        for b in broken:
            print("  -", b)
        sys.exit(1)
    print("HELD:", summary)
    sys.exit(0)
