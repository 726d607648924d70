"""Shared helpers for attack24's scripts: run commands with deadlines, launch two torchrun 'nodes'."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TREE = Path(__file__).resolve().parents[1]
SRC = TREE / "src"
PY = sys.executable
BIN = Path(PY).parent


def env(**extra):
    e = dict(os.environ)
    e["PYTHONPATH"] = str(SRC) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.pop("BARRIERLAB_RECORD_DIR", None)
    e.update({k: str(v) for k, v in extra.items()})
    return e


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, timeout=100, **kw):
    """Run cmd in its own session; on timeout kill its whole group. Returns (rc, out, err)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err
    return p.returncode, out, err


def two_nodes(
    module_args,
    folders,
    nproc=2,
    timeout=90,
    rdzv="static",
    extra_env=None,
    node_env=None,
    kill=None,
    pythonpath_extra=None,
):
    """Start two torchrun processes as nodes 0 and 1 on 127.0.0.1; folders[i] is node i's record folder
    (None: unset). Returns [(rc, out, err), (rc, out, err)]."""
    port = free_port()
    procs = []
    for node in (0, 1):
        e = env(GLOO_SOCKET_IFNAME="lo", BARRIERLAB_TIMEOUT=(extra_env or {}).get("BARRIERLAB_TIMEOUT", 4))
        if extra_env:
            e.update({k: str(v) for k, v in extra_env.items()})
        if node_env and node in node_env:
            e.update({k: str(v) for k, v in node_env[node].items()})
        if pythonpath_extra:
            e["PYTHONPATH"] += os.pathsep + str(pythonpath_extra)
        if folders[node] is not None:
            e["BARRIERLAB_RECORD_DIR"] = str(folders[node])
        cmd = [str(BIN / "torchrun"), "--nnodes", "2", "--nproc-per-node", str(nproc)]
        if rdzv == "static":
            cmd += ["--node-rank", str(node), "--master-addr", "127.0.0.1", "--master-port", str(port)]
        else:
            cmd += [
                "--rdzv-backend",
                "c10d",
                "--rdzv-endpoint",
                f"127.0.0.1:{port}",
                "--rdzv-id",
                "a24",
                "--node-rank",
                str(node),
            ]
        cmd += ["--max-restarts", "0"] + list(module_args)
        procs.append(
            subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=e,
                start_new_session=True,
                cwd=tempfile.gettempdir(),
            )
        )
        if node == 0:
            time.sleep(0.3)
    if kill:  # (node, predicate): SIGKILL that node's whole session (agent and workers) once predicate() holds
        node, ready = kill
        give_up = time.monotonic() + 30
        while not ready() and time.monotonic() < give_up:
            time.sleep(0.05)
        doomed = descendants(procs[node].pid)  # torchrun puts each worker in a session of its own
        for pid in [procs[node].pid] + doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    results = []
    end = time.monotonic() + timeout
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1, end - time.monotonic()))
            results.append((p.returncode, out, err))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            results.append((None, out, err))
    for p in procs:  # anything left in their sessions
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return results


def descendants(pid):
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = [
                int(c)
                for t in os.listdir(f"/proc/{p}/task")
                for c in Path(f"/proc/{p}/task/{t}/children").read_text().split()
            ]
        except OSError:
            continue
        found += kids
        todo += kids
    return found


def report(folder, *extra, timeout=60):
    return run([PY, "-m", "barrierlab", "report", str(folder), *extra], timeout=timeout, env=env())


def merge(folders, into):
    into = Path(into)
    into.mkdir(mode=0o700, exist_ok=True)
    for f in folders:
        for item in Path(f).iterdir():
            if item.name.startswith("rank"):
                shutil.copy2(item, into / item.name)
    return into


class Verdict:
    def __init__(self):
        self.problems = []

    def check(self, ok, what):
        if not ok:
            self.problems.append(what)
            print("BROKEN:", what)
        return ok

    def exit(self):
        if self.problems:
            print(f"\n{len(self.problems)} promise(s) broken")
            sys.exit(1)
        print("promise held")
        sys.exit(0)


# --- Binder-like limits: one CPU (taskset -c 0) and 2 GB of memory (a cgroup v1 memory limit, as Binder's pod has)
CGROUP_V1_MEMORY = Path("/sys/fs/cgroup/memory")


class Limited:
    """A memory cgroup (v1) of 2 GB with swap off; `prefix()` is the command prefix that puts a process in it on
    CPU 0. Every process left in the cgroup is killed and the cgroup removed on exit."""

    def __init__(self, name, limit=2 * 2**30):
        self.path = CGROUP_V1_MEMORY / f"{name}-{os.getpid()}"
        self.limit = limit

    def __enter__(self):
        self.path.mkdir()
        (self.path / "memory.limit_in_bytes").write_text(str(self.limit))
        try:
            (self.path / "memory.swappiness").write_text("0")
        except OSError:
            pass
        return self

    def prefix(self):
        # a shell that joins the cgroup, then execs the command on CPU 0
        return ["sh", "-c", f'echo $$ > {self.path}/cgroup.procs && exec taskset -c 0 "$@"', "limited"]

    def procs(self):
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def oom_kills(self):
        try:
            for line in (self.path / "memory.oom_control").read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def __exit__(self, *exc):
        for _ in range(50):
            left = self.procs()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        try:
            self.path.rmdir()
        except OSError as error:
            print("could not remove", self.path, error)
