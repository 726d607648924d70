"""review93d M1: the advice that ``main_process_first()`` passes rank 0's failure on is given only when rank 0
raised (an exception the context manager catches, shares and re-raises), not when it was killed: a SIGKILL cannot
be caught, so nothing passes it on."""

from __future__ import annotations

import os
import signal
import time

import torch.distributed as dist

import barrierlab as bl


def rank0_fails(how: str):
    if dist.get_rank() == 0:
        time.sleep(0.2)
        if how == "raise":
            raise ValueError("the data could not be prepared")
        os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()


def test_main_process_first_is_advised_for_a_rank_0_that_raised():
    run = bl.run(rank0_fails, 2, args=("raise",), timeout=10, deadline=60)
    assert "main_process_first() passes an exception rank 0 raises" in run.diagnosis.advice, run.diagnosis


def test_main_process_first_is_not_advised_for_a_rank_0_that_was_killed():
    run = bl.run(rank0_fails, 2, args=("kill",), timeout=10, deadline=60)
    assert run[0].signal == signal.SIGKILL, run
    assert "main_process_first" not in run.diagnosis.advice, run.diagnosis
