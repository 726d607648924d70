"""A collective made in a child process forked from a rank: a barrier in a Dataset's ``__getitem__`` run by a
DataLoader worker (attack25 a04 and a11, a program learners write when they first meet barriers). The child's
copy of the process group has no threads to run it, so it never returns, not even to the timeout; the rank
waits in ``for batch in loader:``. The diagnosis names the child's line, not "raise deadline", and the timeline
draws no release for a barrier nobody left."""

from __future__ import annotations

import inspect

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

import barrierlab as bl


class WaitsForTheOthers(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        dist.barrier()  # IN THE WORKER
        return torch.tensor([i])


def train():
    for batch in DataLoader(WaitsForTheOthers(), batch_size=2, num_workers=1):  # THE LOOP
        batch.sum()
    dist.barrier()


def test_a_barrier_in_a_dataloader_worker_is_named_with_the_rank_waiting_for_it():
    run = bl.run(train, 2, timeout=2, deadline=6)
    assert run.statuses == [bl.Status.STOPPED] * 2, run
    d = run.diagnosis
    source, first = inspect.getsourcelines(WaitsForTheOthers)
    worker_line = first + next(i for i, text in enumerate(source) if "# IN THE WORKER" in text)
    source, first = inspect.getsourcelines(train)
    loop_line = first + next(i for i, text in enumerate(source) if "# THE LOOP" in text)
    assert d.headline.startswith("ranks 0 and 1 each forked a child process"), d.headline
    assert f"test_forked_child_collective.py:{worker_line}" in d.headline
    assert f"test_forked_child_collective.py:{loop_line}" in d.headline
    assert "not even to the timeout" in d.headline and "raise `deadline`" not in d.advice
    assert "num_workers=0" in d.advice
    assert run.waits().releases == ()  # nobody left the child's barrier: nothing released it
    assert "waiting on its child" in d.headline, d.headline


def forks_a_child_that_waits_in_a_barrier():
    """review61b M4: the rank waits for its child to end (os.waitpid); the child's barrier is not the rank's call."""
    import os

    pid = os.fork()
    if pid == 0:
        try:
            dist.barrier()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    dist.barrier()


def test_a_childs_collective_is_not_counted_as_its_ranks():
    d = bl.run(forks_a_child_that_waits_in_a_barrier, 2, timeout=2, deadline=6).diagnosis
    assert d.headline.startswith("ranks 0 and 1 each forked a child process"), d.headline
    assert any("stopped at the deadline after 0 collective calls" in e for e in d.evidence), d.evidence
