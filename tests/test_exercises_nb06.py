"""Notebook 06's check rejects the wrong ways to hand rank 0's vocabulary over and passes the right one."""

from __future__ import annotations

import json
import os
import time

import pytest
import torch
import torch.distributed as dist

from barrierlab.exercises import nb06
from barrierlab.scenarios.store_handoff import build_vocab


def _through_a_file(folder, wait):
    rank = dist.get_rank()
    path = os.path.join(folder, "vocab.json")
    if rank == 0:
        with open(path, "w") as f:
            json.dump(build_vocab(), f)
    wait()
    with open(path) as f:
        return json.load(f)


def unsolved(folder):
    return _through_a_file(folder, dist.barrier)


def dummy_all_reduce_for_barrier(folder):
    return _through_a_file(folder, lambda: dist.all_reduce(torch.zeros(1)))


def sleep_for_barrier(folder):
    return _through_a_file(folder, lambda: time.sleep(0.5) if dist.get_rank() else None)


def every_rank_builds_its_own(folder):
    box = [build_vocab()]
    dist.broadcast_object_list(box, src=0)  # "uses broadcast_object_list", but every rank paid for the build
    return box[0]


def solution_plus_barrier(folder):
    box = [build_vocab() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    dist.barrier()  # "to be safe"
    return box[0]


def solution(folder):
    box = [build_vocab() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


@pytest.mark.parametrize(
    "answer, says",
    [
        (unsolved, "barrier"),
        (dummy_all_reduce_for_barrier, "files"),
        (sleep_for_barrier, "files"),
        (every_rank_builds_its_own, "build_vocab ran on ranks [0, 1, 2, 3]"),
        (solution_plus_barrier, "barrier"),
    ],
)
def test_check_rejects_wrong_fixes(answer, says):
    feedback = nb06.check_share_vocab(answer)
    assert not feedback.passed, feedback.message
    assert feedback.message.startswith("✗") and says in feedback.message, feedback.message


def test_check_passes_the_solution():
    feedback = nb06.check_share_vocab(solution)
    assert feedback.passed, feedback.message
