"""The ordering model on ordinary store and point-to-point handoffs, from real runs (attack11): send/recv naming
the peer by its rank in the group pair up (a13)."""

from __future__ import annotations

import pytest

import barrierlab as bl
from barrierlab import ordering

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]


def send_by_group_rank(path, blocking):
    """Rank 0 writes a file, then sends on the group of ranks 0 and 2, naming the receiver by its rank in the group
    (group_dst=1: global rank 2); the receiver names the sender by group_src= and reads the file."""
    import torch
    import torch.distributed as dist

    rank = dist.get_rank()
    pipe = dist.new_group([0, 2])  # group ranks: 0 -> 0, 2 -> 1
    t = torch.zeros(1)
    if rank == 0:
        with open(path, "w") as f:
            f.write("x")
        t += 1
        if blocking:
            dist.send(t, group=pipe, group_dst=1)
        else:
            dist.isend(t, group=pipe, group_dst=1).wait()
    elif rank == 2:
        if blocking:
            dist.recv(t, group=pipe, group_src=0)
        else:
            dist.irecv(t, group=pipe, group_src=0).wait()
        with open(path) as f:
            f.read()
    return t.item()


@pytest.mark.parametrize("blocking", [True, False])
def test_send_and_recv_naming_the_peer_by_its_rank_in_the_group_pair_up(tmp_path, blocking):
    """The model read only dst/src (a13): the message that orders the read was not paired."""
    run = bl.run(send_by_group_rank, 3, args=(str(tmp_path / "activations.txt"), blocking), timeout=10)
    assert run.ok and run.values == [1.0, 0.0, 1.0], run
    assert ordering.races(run) == [], ordering.races(run)
