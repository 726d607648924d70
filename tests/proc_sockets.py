"""Listening TCP sockets of given processes, read from /proc (Linux): used inside ranks by the tests that check
that nothing of a group listens beyond loopback (tests/test_launch.py, test_learner_code.py, and the script
test_script_runner.py runs; tests/ is on the ranks' sys.path)."""

from __future__ import annotations

import os
import socket

LOOPBACK = ("127.0.0.1", "::1")


def listening(pids) -> list[str]:
    """The local address of every listening TCP socket the processes ``pids`` hold open."""
    inodes = set()
    for pid in pids:
        folder = f"/proc/{pid}/fd"
        for fd in os.listdir(folder):
            try:
                target = os.readlink(f"{folder}/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                    raw = bytes.fromhex(fields[1].split(":")[0])  # in host (little-endian) 32-bit words
                    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                    found.append(socket.inet_ntop(family, words))
    return found


def beyond_loopback(pids) -> list[str]:
    """The addresses of those sockets that are not 127.0.0.1 or ::1."""
    return [address for address in listening(pids) if address not in LOOPBACK]
