"""Promise 6: every socket of a run binds loopback only. docs/reference.md: a GLOO_SOCKET_IFNAME the rank's code sets
"is set back to lo before each group is made". A rank that sets it (as a multi-machine script does) and then makes a
gloo group by constructing torch.distributed.ProcessGroupGloo itself (on a PrefixStore of the run's store) gets
gloo sockets listening on that interface's address. Exit 0 if every TCP socket of the ranks is on 127.0.0.0/8
(or the machine has no other IPv4 interface to test with), 1 if one listens beyond loopback."""

import fcntl
import os
import socket
import struct
import sys

import barrierlab as bl


def ipv4_of(name: str) -> str | None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))  # SIOCGIFADDR
        return socket.inet_ntoa(packed[20:24])
    except OSError:
        return None
    finally:
        s.close()


def make_own_gloo_group(interface):
    import os
    import socket
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    os.environ["GLOO_SOCKET_IFNAME"] = interface  # as a script written for several machines sets it
    store = dist.PrefixStore("own-group", c10d._get_default_store())
    pg = dist.ProcessGroupGloo(store, dist.get_rank(), dist.get_world_size(), timedelta(seconds=5))
    t = torch.ones(1)
    pg.allreduce([t]).wait()
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            mine.add(link[8:-1])
    listening = set()
    with open("/proc/net/tcp") as f:
        for line in f.read().splitlines()[1:]:
            fields = line.split()
            if fields[9] in mine and fields[3] == "0A":  # LISTEN
                listening.add(socket.inet_ntoa(bytes.fromhex(fields[1].split(":")[0])[::-1]))
    return t.item(), sorted(listening)


def main() -> int:
    candidates = [(n, ipv4_of(n)) for n in sorted(os.listdir("/sys/class/net")) if n != "lo"]
    candidates = [(n, a) for n, a in candidates if a and not a.startswith("127.")]
    if not candidates:
        print("no IPv4 interface beyond loopback here: nothing to test")
        return 0
    interface, address = candidates[0]
    run = bl.run(make_own_gloo_group, 2, args=(interface,), live=False, timeout=5)
    print(f"interface {interface} ({address}); statuses {run.statuses}; values {run.values}")
    beyond = [a for value in run.values if value for a in value[1] if not a.startswith("127.")]
    if beyond:
        print(f"BROKEN: the ranks' gloo sockets listen on {sorted(set(beyond))}, beyond loopback")
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
