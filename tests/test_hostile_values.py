"""What a rank returns is untrusted: checking it in a throwaway child never hurts the kernel, never outlasts the
deadline, leaves no process behind, and no code of the value's runs in the kernel; ordinary values (tensors,
numpy arrays, dataclasses, named tuples and exceptions of the learner's own modules) still come back as real
objects. Every case goes through ``barrierlab.run`` with real rank code."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch.distributed as dist
from conftest import wait_until_gone

import barrierlab as bl

KERNEL_PID = os.getpid()  # the test process; the checking children forked from it see another PID


# --- B3: what the check's child starts ends with the check -------------------------------------------------
def start_daemons(log: str) -> list:
    """Run while the value is unpickled: in a checking child only, start a program in its own session and a
    detached shell job, and note their PIDs."""
    if os.getpid() != KERNEL_PID:
        popen = subprocess.Popen(["sleep", "300"], start_new_session=True)
        os.system(f"setsid sleep 301 >/dev/null 2>&1 < /dev/null & echo $! >> {log}")
        with open(log, "a") as f:
            f.write(f"{popen.pid}\n")
    return [1, 2, 3]


class StartsDaemons:
    def __init__(self, log: str) -> None:
        self.log = log

    def __reduce__(self):
        return start_daemons, (self.log,)


def return_a_value_that_starts_daemons(log):
    return StartsDaemons(log)


@pytest.mark.timeout(120)
def test_what_the_checking_child_starts_ends_with_the_check(tmp_path):
    log = tmp_path / "pids"
    log.touch()
    run = bl.run(return_a_value_that_starts_daemons, 1, args=(str(log),), timeout=5, deadline=10)
    assert run.values == [[1, 2, 3]], run
    pids = [int(p) for p in log.read_text().split()]
    assert len(pids) == 2
    left = wait_until_gone(pids, 1.0)
    for pid in left:
        os.kill(pid, 9)
    assert left == []
