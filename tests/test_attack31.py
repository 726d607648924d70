"""attack31's broken promises, fixed (session 32): each test failed before its fix.

a04: a store a rank makes itself listened on every interface under ``init=True``; a01: ``barrierlab run -m pkg.mod``
imported the package in the launching process; a02: a script that lowered its soft file-size limit at its end could
not report; a08: ``env={"TORCH_DISTRIBUTED_DEBUG": "bogus"}`` started the ranks only for each to fail in set-up."""

from __future__ import annotations

import socket
from datetime import timedelta
from pathlib import Path

import pytest

import barrierlab as bl

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def _listening_on(port: int) -> list[str]:
    """The local addresses of the sockets listening on TCP ``port`` (``/proc/net/tcp`` and ``tcp6``)."""
    found = []
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                address, _, hex_port = fields[1].partition(":")
                if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A = LISTEN
                    raw = bytes.fromhex(address)  # in host (little-endian) 32-bit words
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                    found.append(socket.inet_ntop(family, words))
    return found


def _own_store_and_group(rank=None, host="0.0.0.0"):
    """A second group built as torch's docs show it: a store of the rank's own (rank 0 its master, on a port the
    system picks), then ``ProcessGroupGloo``; rank 0 returns where that store listens."""
    import torch
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    if rank is not None:  # init=False: the function starts the run's group itself
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        store = dist.TCPStore(host, 0, world, True, timedelta(seconds=20), wait_for_workers=False)
        c10d._get_default_store().set("attack31/port", str(store.port))
    port = int(c10d._get_default_store().get("attack31/port"))
    if rank != 0:
        store = dist.TCPStore("127.0.0.1", port, world, False, timedelta(seconds=20))
    group = dist.ProcessGroupGloo(store, rank, world, timedelta(seconds=20))
    t = torch.ones(1)
    group.allreduce([t]).wait()
    found = (t.item(), _listening_on(port) if rank == 0 else None)
    dist.barrier()
    return found


@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.timeout(120)
@pytest.mark.parametrize("init", [True, False])
@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1"])
def test_a04_a_store_the_rank_makes_listens_on_loopback_only(init, host):
    if init:
        run = bl.run(_own_store_and_group, 2, kwargs={"host": host}, timeout=20, deadline=60)
    else:
        run = bl.run(_own_store_and_group, 2, kwargs={"host": host}, timeout=20, deadline=60, init=False)
    assert run.ok, str(run)
    total, listening = run.values[0]
    assert total == 2.0
    assert listening == ["127.0.0.1"], listening  # before: ["::"] under init=True, every interface
