"""Shared helper of attacks20 repros: run a script or module under torchrun and under `barrierlab run`."""

import os
import signal
import subprocess
import sys

PY = sys.executable
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC
    env.pop("BARRIERLAB_RECORD_DIR", None)
    return env


def _run(cmd, cwd, timeout=150):
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the session this helper made for it
        out, err = proc.communicate()
        return 124, out, err
    return proc.returncode, out, err


def torchrun(target, n, cwd, module=False):
    cmd = [PY, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}", "--tee=3"]
    return _run(cmd + (["-m", target] if module else [target]), cwd)


def barrierlab_run(target, n, cwd, module=False, extra=()):
    cmd = [PY, "-m", "barrierlab", "run", *(["-m", target] if module else [target]), "-n", str(n), *extra]
    return _run(cmd, cwd)
