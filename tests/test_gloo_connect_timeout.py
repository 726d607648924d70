"""gloo waits five times the group's timeout for a pair's first connection (the fact words.LATER_GROUP_FAILS states:
facebookincubator/gloo gloo/transport/tcp/pair.h, Pair::waitUntil, ``timeout_ * 5``), measured on the torch
installed here.

Two processes build a ``ProcessGroupGloo`` of 2 ranks with a 0.5 s timeout over one TCPStore, each through a store
that passes every call on, except that the rank gloo makes the connecting side of the pair (the one whose listening
port is larger: gloo's tcp/device.cc ``Device::isInitiator``) stops once it has read its peer's address and never
connects. Its peer, the listening side, waits for a first connection that never comes, and must raise gloo's
'Connect timeout' five times the timeout after it read the other's address, not one timeout after."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

TIMEOUT = 0.5

RANK = textwrap.dedent(
    """
    import datetime, os, struct, sys, time
    import torch.distributed as dist

    timeout, rank, port = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


    def listening_port(info: bytes) -> int:
        # gloo's tcp Rank record: hostname size and hostname, address size and a sockaddr_storage (port at +2),
        # read as gloo compares it (Device::isInitiator subtracts the raw sin_port values)
        (size,) = struct.unpack_from("<Q", info, 0)
        return struct.unpack_from("<H", info, 8 + size + 8 + 2)[0]


    class Gate(dist.Store):
        def __init__(self, inner):
            super().__init__()
            self.inner, self.mine, self.peer_read = inner, None, None

        def set(self, key, value):
            if self.mine is None:
                self.mine = bytes(value)
            self.inner.set(key, value)

        def get(self, key):
            value = self.inner.get(key)
            if self.mine is not None and bytes(value) != self.mine:
                if listening_port(self.mine) > listening_port(bytes(value)):  # gloo makes this rank connect
                    print("connecting side", flush=True)
                    time.sleep(5 * timeout + 3)  # outlives its peer's wait
                    os._exit(0)
                self.peer_read = time.monotonic()  # the pair connects right after this read
            return value

        def wait(self, keys, timeout=None):
            return self.inner.wait(keys) if timeout is None else self.inner.wait(keys, timeout)

        def add(self, key, n):
            return self.inner.add(key, n)

        def check(self, keys):
            return self.inner.check(keys)


    store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, timeout=datetime.timedelta(seconds=60))
    gate = Gate(store)
    try:
        dist.ProcessGroupGloo(gate, rank, 2, datetime.timedelta(seconds=timeout))
        print(f"made after {time.monotonic() - gate.peer_read:.2f}", flush=True)
    except Exception as error:
        print(f"raised after {time.monotonic() - gate.peer_read:.2f}: {error}", flush=True)
    os._exit(0)
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_gloo_waits_five_times_the_timeout_for_a_first_connection(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    port = _free_port()
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo"}
    ranks = [
        subprocess.Popen(
            [sys.executable, str(script), str(TIMEOUT), str(rank), str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        for rank in (0, 1)
    ]
    try:
        outputs = [rank.communicate(timeout=60)[0] for rank in ranks]
    finally:
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()
                rank.wait()
    assert sorted("connecting side" in out for out in outputs) == [False, True], outputs
    waited = next(out for out in outputs if "connecting side" not in out)
    assert waited.startswith("raised after ") and "Connect timeout" in waited, waited
    assert "pair.h" in waited, waited  # gloo's header raises it: Pair::waitUntil
    seconds = float(waited.split()[2].rstrip(":"))
    # five times the timeout: not one (the read/write timeout), and not much more (a busy machine adds little)
    assert 5 * TIMEOUT - 0.1 <= seconds < 5 * TIMEOUT + 3, waited
