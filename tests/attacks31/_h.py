"""Shared helper for attack31's scripts.

Each attack writes a driver program (and any files it needs) into a temporary folder, runs it in a session of
its own under a deadline (`timeout -s KILL`), with a marker variable in its environment and TMPDIR pointing into
that folder (so barrierlab's run folders land there), and afterwards looks in /proc for any process still
carrying the marker (killing only those, by pidfd) and in the cgroup v2 tree for run cgroups the driver left.
The temporary folder is removed at the end.
"""

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
REPO = os.path.dirname(os.path.dirname(HERE))  # tests/attacks31/ in barrierlab (attackfix32)
SRC = os.path.join(REPO, "src")
PY = "/work/main/.venv/bin/python"
MARK = "ATTACK31_MARK"
CGROUP_ROOTS = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")

if SRC not in sys.path:
    sys.path.insert(0, SRC)


def marked_pids(mark: str) -> list[int]:
    """PIDs whose initial environment holds MARK=mark."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(int(name))
    return found


def describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:120]
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rpartition(")")[2].split()[0]
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} comm={comm} state={state} cmd={cmd!r}"


def kill_marked(mark: str) -> list[str]:
    """Kill (SIGKILL, by pidfd) every process carrying the marker; return their descriptions."""
    seen = []
    for _ in range(20):
        pids = marked_pids(mark)
        if not pids:
            break
        for pid in pids:
            seen.append(describe(pid))
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os.close(fd)
        time.sleep(0.1)
    return sorted(set(seen))


def run_cgroups(pid: int) -> list[str]:
    """Run cgroups named after the driver's PID (barrierlab-run-<pid>-...)."""
    found = []
    for root in CGROUP_ROOTS:
        try:
            names = os.listdir(root)
        except OSError:
            continue
        found += [os.path.join(root, n) for n in names if n.startswith(f"barrierlab-run-{pid}-")]
    return found


def all_run_cgroups() -> set[str]:
    """Every barrierlab-run-* cgroup at the top of the cgroup v2 tree and one level below."""
    found = set()
    for root in CGROUP_ROOTS:
        try:
            top = os.listdir(root)
        except OSError:
            continue
        for n in top:
            if n.startswith("barrierlab-run-"):
                found.add(os.path.join(root, n))
                try:
                    found.update(
                        os.path.join(root, n, m)
                        for m in os.listdir(os.path.join(root, n))
                        if m.startswith("barrierlab-run-")
                    )
                except OSError:
                    pass
    return found


def owner_alive(path: str) -> bool:
    try:
        return os.path.exists(f"/proc/{int(os.path.basename(path).split('-')[2])}")
    except (IndexError, ValueError):
        return True


def remove_cgroup_tree(path: str) -> None:
    for dirpath, dirnames, _ in sorted(os.walk(path, topdown=False), key=lambda t: -len(t[0])):
        try:
            with open(os.path.join(dirpath, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError:
            pass
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


class Result:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    def show(self) -> str:
        return (
            f"rc={self.rc} elapsed={self.elapsed:.2f}s survivors={len(self.survivors)} cgroups_left={len(self.cgroups)}"
            f" tmp_left={self.tmp_left}\n--- stdout ---\n{self.stdout[-6000:]}\n--- stderr ---\n{self.stderr[-4000:]}"
        )


def run_driver(
    code: str,
    timeout: float = 120,
    files: dict[str, str | bytes] | None = None,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
    linger_check: float = 1.0,
) -> Result:
    """Run ``code`` (a Python program) as driver.py in a fresh temporary folder, in a session of its own, under
    ``timeout`` seconds (then SIGKILL of its session), with the marker in its environment. ``argv``: run this
    command instead of ``python driver.py`` (e.g. the barrierlab CLI); ``{dir}`` in it is the folder."""
    folder = tempfile.mkdtemp(prefix="attack31-")
    mark = uuid.uuid4().hex
    tmp = os.path.join(folder, "tmp")
    os.mkdir(tmp)
    try:
        with open(os.path.join(folder, "driver.py"), "w") as f:
            f.write(textwrap.dedent(code))
        for name, content in (files or {}).items():
            path = os.path.join(folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb" if isinstance(content, bytes) else "w") as f:
                f.write(content if isinstance(content, bytes) else textwrap.dedent(content))
        full_env = dict(os.environ)
        full_env.update(
            {
                "PYTHONPATH": SRC,
                MARK: mark,
                "TMPDIR": tmp,
                "BARRIERLAB_LIVE": "0",
                "PYTHONUNBUFFERED": "1",
                "ATTACK_DIR": folder,
            }
        )
        full_env.update(env or {})
        command = [c.replace("{dir}", folder) for c in argv] if argv else [PY, "driver.py"]
        # write the driver's PID (kept across the exec) so that its run cgroups can be found afterwards
        wrapper = "import os,sys; open('driver.pid','w').write(str(os.getpid())); os.execvp(sys.argv[1], sys.argv[1:])"
        command = [PY, "-c", wrapper, *command]
        cgroups_before = all_run_cgroups()
        started = time.monotonic()
        proc = subprocess.Popen(
            ["timeout", "-s", "KILL", str(timeout), *command],
            cwd=folder,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        elapsed = time.monotonic() - started
        time.sleep(linger_check)
        survivors = kill_marked(mark)
        try:
            driver_pid = int(open(os.path.join(folder, "driver.pid")).read())
        except (OSError, ValueError):
            driver_pid = -1
        cgroups = run_cgroups(driver_pid)
        for path in cgroups:  # only the driver's own (named after its PID): never another program's
            remove_cgroup_tree(path)
        # new run cgroups whose owner is dead (a nested run's, named after a rank's PID); only reported, never
        # touched: another program's kernel may have died meanwhile
        other_cgroups = sorted(p for p in all_run_cgroups() - cgroups_before if not owner_alive(p))
        tmp_left = sorted(os.listdir(tmp))
        return Result(
            rc=proc.returncode,
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
            elapsed=elapsed,
            survivors=survivors,
            cgroups=cgroups,
            other_cgroups=other_cgroups,
            tmp_left=tmp_left,
            folder=folder,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def verdict(broken: bool, what: str) -> None:
    print(("BROKEN: " if broken else "HELD: ") + what)
    sys.exit(1 if broken else 0)
