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
