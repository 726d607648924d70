"""Texts review73c found misleading (M1 to M5), each checked on a real run."""

from __future__ import annotations

import pytest

import barrierlab as bl


def recv_from_previous_then_send():
    """review73c M1: every rank receives from (r - 1) % n first: each waits on the previous rank."""
    import torch
    import torch.distributed as dist

    r, n = dist.get_rank(), dist.get_world_size()
    t = torch.zeros(1)
    dist.recv(t, src=(r - 1) % n)
    dist.send(t, dst=(r + 1) % n)


def recv_from_next_then_send():
    """The same cycle the other way round: each rank waits on the next rank."""
    import torch
    import torch.distributed as dist

    r, n = dist.get_rank(), dist.get_world_size()
    t = torch.zeros(1)
    dist.recv(t, src=(r + 1) % n)
    dist.send(t, dst=(r - 1) % n)


@pytest.mark.timeout(120)
def test_a_recv_cycle_names_the_rank_each_waits_on():
    previous = bl.run(recv_from_previous_then_send, 4, timeout=2).diagnosis
    assert previous.kind == "p2p-cycle", previous
    assert "each wait in recv from the previous rank (rank - 1; rank 0 from rank 3)" in previous.headline, previous
    assert "next rank" not in previous.headline, previous
    following = bl.run(recv_from_next_then_send, 4, timeout=2).diagnosis
    assert following.kind == "p2p-cycle", following
    assert "each wait in recv from the next rank (rank + 1; rank 3 from rank 0)" in following.headline, following
    assert "previous rank" not in following.headline, following


def remove_after_the_others_read(folder):
    """review73c M2 (notebook 08's exercise with fix 2 a sleep): rank 0 writes a file, a barrier, every rank
    reads it, and rank 0 removes it after a sleep, with nothing ordering the removal after the reads."""
    import os
    import time

    import torch.distributed as dist

    path = os.path.join(folder, "checkpoint.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("c")
    dist.barrier()
    with open(path) as f:
        f.read()
    if dist.get_rank() == 0:
        time.sleep(1.0)
        os.remove(path)


def read_after_a_sleep(folder):
    """A write then reads, ordered by a sleep only: the readers must be held until the writer has written."""
    import os
    import time

    import torch.distributed as dist

    path = os.path.join(folder, "data.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("d")
    else:
        time.sleep(1.0)
        with open(path) as f:
            f.read()


@pytest.mark.timeout(120)
def test_a_finished_run_whose_race_is_a_removal_says_to_hold_the_remover(tmp_path):
    run = bl.run(remove_after_the_others_read, 3, args=(str(tmp_path),), timeout=5)
    assert run.statuses == ["finished"] * 3, run
    d = run.diagnosis
    assert "raced: nothing ordered a rank's removal of a file after the other ranks' use of it" in d.headline, d
    assert d.advice.startswith("Hold the rank that removes the file until every other rank has used it"), d
    assert "writer" not in d.headline + d.advice, d


@pytest.mark.timeout(120)
def test_a_finished_run_whose_race_is_a_write_then_read_keeps_its_advice(tmp_path):
    run = bl.run(read_after_a_sleep, 3, args=(str(tmp_path),), timeout=5)
    assert run.statuses == ["finished"] * 3, run
    d = run.diagnosis
    assert "raced: nothing ordered a rank's use of a file after another rank's change of it" in d.headline, d
    assert "holds the reading rank until the writer has arrived" in d.advice and "removal" not in d.advice, d
