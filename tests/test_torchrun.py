"""The lesson scenarios run unchanged under real torchrun, bounded in time, and report like a notebook.

Where the machine allows it (root and util-linux ``unshare``), torchrun runs in a private network
namespace that has only a loopback interface, so its rendezvous store (which listens on all interfaces)
is reachable from nowhere else.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from barrierlab import report

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="torchrun tests run on Linux")


def _isolated() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


ISOLATED = _isolated()


def torchrun(module: str, nproc: int, record_dir, *kwargs: str, timeout: float = 2.0):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
               "-m", f"barrierlab.scenarios.{module}", *kwargs]
    env = dict(os.environ, BARRIERLAB_RECORD_DIR=str(record_dir), BARRIERLAB_TIMEOUT=str(timeout),
               GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    if ISOLATED:
        command = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_healthy_scenario_exits_zero_and_records_every_rank(tmp_path):
    done = torchrun("straggler", 2, tmp_path, "steps=3", "delay=0.1")
    assert done.returncode == 0, done.stderr[-3000:]
    run = report.load(str(tmp_path))
    assert run.ok and run.world_size == 2
    assert [len([e for e in r.events if e.name == "barrier"]) for r in run] == [3, 3]
    assert run.diagnosis.ok
    assert run.summary()["straggler"] == 1


def test_deadlock_scenario_exits_nonzero_with_the_diagnosis(tmp_path):
    done = torchrun("barrier_on_rank0", 2, tmp_path)
    assert done.returncode != 0
    assert re.search(r"A collective reached by only some ranks: rank 0 called barrier #1 at \S*barrier_on_rank0\.py:12\b"
                     r".*; rank 1 never did\.", done.stderr)


def test_report_command_draws_the_timeline_of_a_torchrun_job(tmp_path):
    torchrun("barrier_on_rank0", 2, tmp_path / "records")
    png = tmp_path / "timeline.png"
    done = subprocess.run([sys.executable, "-m", "barrierlab", "report", str(tmp_path / "records"),
                           "--timeline", str(png)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1  # the job failed, and the report says so
    assert "rank 0: raised" in done.stdout and "rank 1: finished" in done.stdout
    assert png.stat().st_size > 10_000
