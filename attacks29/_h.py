"""Shared helpers for attacks29: run one program under plain torchrun, under `barrierlab run` and (optionally)
through bl.run from a notebook-like caller, each in a fresh temporary working folder, and collect what it printed
(lines starting with RESULT), its exit status and the files it wrote. Everything runs in its own session and is
killed by process group on timeout; temporary folders are removed."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
PY = sys.executable
TORCHRUN = os.path.join(os.path.dirname(PY), "torchrun")


def _env(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC
    for k in (
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "TORCH_DISTRIBUTED_DEBUG",
        "OMP_NUM_THREADS",
        "TORCH_COMPILE_DISABLE",
        "BARRIERLAB_LIVE",
    ):
        env.pop(k, None)
    env["BARRIERLAB_LIVE"] = "0"
    env.update(extra or {})
    return env


def _run(cmd, cwd, timeout, env=None, stdin=None):
    p = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return "timeout", out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    try:
        os.killpg(p.pid, signal.SIGKILL)  # anything left in its session
    except ProcessLookupError:
        pass
    return p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def results(text):
    """The RESULT lines a program printed, sorted (ranks print in any order), whatever prefix a report adds."""
    found = []
    for line in text.splitlines():
        for piece in line.split("RESULT ")[1:]:  # two processes' lines can meet on one pipe line
            found.append(piece.strip())
    return sorted(found)


def files_of(folder):
    got = {}
    for root, _dirs, names in os.walk(folder):
        for n in names:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, folder)
            if rel.startswith(("prog.py", "caller.py")):
                continue
            try:
                with open(p, "rb") as f:
                    got[rel] = f.read()
            except OSError:
                got[rel] = None
    return got


def under(launcher, program, n=2, args=(), timeout=110, env=None, extra_files=None, bl_args=(), stdin=None):
    """Run `program` (source text, saved as prog.py) under launcher 'torchrun' or 'barrierlab';
    returns dict(rc, out, err, results, files)."""
    d = tempfile.mkdtemp(prefix=f"a29_{launcher}_")
    try:
        with open(os.path.join(d, "prog.py"), "w") as f:
            f.write(program)
        for name, text in (extra_files or {}).items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        if launcher == "torchrun":
            cmd = [TORCHRUN, f"--nproc-per-node={n}", "prog.py", *args]
        else:
            cmd = [PY, "-m", "barrierlab", "run", "prog.py", "-n", str(n), *bl_args, "--", *args]
        rc, out, err = _run(cmd, d, timeout, env, stdin)
        files = files_of(d)
        for name in extra_files or {}:
            files.pop(name, None)
        return {"rc": rc, "out": out, "err": err, "results": results(out + "\n" + err), "files": files}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def bl_fn(caller, timeout=110, env=None):
    """Run `caller` (a notebook-like script that imports barrierlab and calls bl.run) with the tree's barrierlab."""
    d = tempfile.mkdtemp(prefix="a29_fn_")
    try:
        with open(os.path.join(d, "caller.py"), "w") as f:
            f.write(caller)
        rc, out, err = _run([PY, "caller.py"], d, timeout, env)
        return {"rc": rc, "out": out, "err": err, "results": results(out + "\n" + err), "files": files_of(d)}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def verdict(same, what, **shown):
    if same:
        print(f"HELD: {what}")
        sys.exit(0)
    print(f"BROKEN: {what}")
    for k, v in shown.items():
        print(f"--- {k}:")
        print(v if isinstance(v, str) else repr(v))
    sys.exit(1)
