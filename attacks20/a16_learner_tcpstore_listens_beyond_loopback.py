"""Promise 6 (docs/reference.md, init=False: "Whatever address or port it sets, the group joins a store
barrierlab hosts on 127.0.0.1, so nothing listens beyond your machine and runs never collide").

Tutorial-style code that builds its group from a store it makes itself:
`store = dist.TCPStore("0.0.0.0", PORT, world_size, is_master=(rank == 0)); init_process_group("gloo",
store=store, ...)`. barrierlab redirects init_method="tcp://0.0.0.0:PORT" and MASTER_ADDR=0.0.0.0 to its
loopback store (checked: only 127.0.0.1 listens then), but the TCPStore the code makes itself is left as asked:
rank 0 listens on every interface (:: / 0.0.0.0) at PORT during the run, and two notebooks running this code
would collide on PORT."""

import os
import socket
import sys

import torch.distributed as dist

import barrierlab as bl


def _listening():
    """(address, port) of this process's listening TCP sockets."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/net/{table}") as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                if parts[3] == "0A" and parts[9] in inodes:
                    address, port = parts[1].split(":")
                    found.append((address, int(port, 16)))
    return found


def demo(rank, world_size, port):
    store = dist.TCPStore("0.0.0.0", port, world_size, is_master=(rank == 0))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size)
    dist.barrier()
    found = _listening()
    dist.destroy_process_group()
    return found


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    port = _free_port()
    run = bl.run(demo, 2, args=(2, port), init=False, timeout=10, live=False)
    if not run.ok:
        print(run)
        return 1
    loopback = ("0100007F", "00000000000000000000000001000000")
    beyond = [(r.rank, a, p) for r in run.ranks for a, p in r.value if a not in loopback]
    print("listening sockets per rank:", {r.rank: r.value for r in run.ranks})
    if beyond:
        for rank, address, p in beyond:
            print(f"BROKEN: rank {rank} listened on {address} (not loopback), port {p}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
