"""a04: a store a rank makes itself, in bl.run's default mode (init=True), listens on every interface.

Promise (docs/reference.md, "How it works"): the run's group "uses GLOO_SOCKET_IFNAME=lo: nothing listens beyond
loopback, no fixed ports ... a group a rank builds itself with ProcessGroupGloo ... [is] put on loopback too";
and under init=False "A TCPStore your code makes itself ... its master listens on 127.0.0.1 only (attack20 a16)".
Here the rank builds a second group the way torch's docs show it (its own TCPStore, then ProcessGroupGloo), and
even asks for 127.0.0.1. The rank then looks in /proc/net/tcp{,6} at what its store's port is bound to and
connects to it through the machine's non-loopback address.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _h

DRIVER = r"""
import json, socket
import barrierlab as bl

def outside_address():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))   # no packet is sent: this only picks the interface's address
        return s.getsockname()[0]
    finally:
        s.close()

def fn(init_false_rank=None):
    import os, socket
    from datetime import timedelta
    import torch, torch.distributed as dist
    if init_false_rank is not None:
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    # a second group, built the way torch documents it: a store of the rank's own, then ProcessGroupGloo
    port_key = "attack31/port"
    if rank == 0:
        store = dist.TCPStore("127.0.0.1", 0, world, True, timedelta(seconds=10), wait_for_workers=False)
        dist.distributed_c10d._get_default_store().set(port_key, str(store.port))
    port = int(dist.distributed_c10d._get_default_store().get(port_key))
    if rank != 0:
        store = dist.TCPStore("127.0.0.1", port, world, False, timedelta(seconds=10))
    pg = dist.ProcessGroupGloo(store, rank, world, timedelta(seconds=10))
    t = torch.ones(1)
    pg.allreduce([t]).wait()
    found = {"sum": t.item(), "port": port}
    if rank == 0:
        binds = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in open(table).read().splitlines()[1:]:
                fields = line.split()
                local, state = fields[1], fields[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    binds.append((table.rsplit("/", 1)[1], local.rsplit(":", 1)[0]))
        found["listening"] = binds
        addr = OUTSIDE
        try:
            c = socket.create_connection((addr, port), timeout=2)
            c.close()
            found["reached_through"] = addr
        except OSError as e:
            found["reached_through"] = f"refused on {addr}: {e}"
    dist.barrier()
    return found

import sys
src = fn.__code__
outside = outside_address()
fn.__globals__["OUTSIDE"] = outside
for mode in ("init=True", "init=False"):
    if mode == "init=True":
        run = bl.run(fn, 2, timeout=10, deadline=30)
    else:
        run = bl.run(lambda rank: fn(rank), 2, timeout=10, deadline=30, init=False)
    print(mode, "ok" if run.ok else "FAILED", json.dumps(run.values[0] if run.ok else str(run)[:800]))
"""

r = _h.run_driver(DRIVER, timeout=200)
print(r.show())
lines = [l for l in r.stdout.splitlines() if l.startswith("init=")]
import json

broken = False
for l in lines:
    mode, status, rest = l.split(" ", 2)
    if status == "ok":
        v = json.loads(rest)
        wide = [b for b in v.get("listening", []) if b[1] not in ("0100007F", "00000000000000000000000001000000")]
        reached = not str(v.get("reached_through", "")).startswith("refused")
        print(f"{mode}: listening on {v.get('listening')} reached from outside address: {v.get('reached_through')}")
        if wide or reached:
            broken = True
_h.verdict(broken or bool(r.survivors) or len(lines) < 2, "a rank's own store for its own ProcessGroupGloo (see above)")
