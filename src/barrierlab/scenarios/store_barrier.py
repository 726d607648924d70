"""A barrier made of key-value store calls (add + wait): coordination outside the collective stream."""

import socket
import time
from datetime import timedelta

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def loopback_store(timeout=timedelta(seconds=30)):
    """A TCPStore served by rank 0 on 127.0.0.1 only; one broadcast tells the others its port.

    TCPStore(host, port, is_master=True) listens on every interface; a socket bound to 127.0.0.1
    (master_listen_fd) keeps it on this machine. Across machines, bind to the cluster network.
    """
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        store = dist.TCPStore("127.0.0.1", port, world_size, is_master=True, timeout=timeout,
                              master_listen_fd=listener.detach(), wait_for_workers=False)
    address = [port if rank == 0 else None]
    dist.broadcast_object_list(address, src=0)
    if rank != 0:
        store = dist.TCPStore("127.0.0.1", address[0], world_size, is_master=False, timeout=timeout)
    return store


def store_barrier(store, name, world_size, timeout=timedelta(seconds=30)):
    """Return once ``world_size`` processes have called ``store_barrier`` with this ``name``.

    Each arrival adds 1 to a counter; the last one sets an "open" key; everyone waits for that key.
    Keys are never reset, so every barrier needs a new name.
    """
    if store.add(f"{name}/arrived", 1) == world_size:
        store.set(f"{name}/open", "1")
    store.wait([f"{name}/open"], timeout)


def close_store(store, world_size, timeout=timedelta(seconds=30)):
    """Call on every rank when done with the store: rank 0 serves it, so it must not exit before the others."""
    if store.add("closing", 1) == world_size:
        store.set("closed", "1")
    if dist.get_rank() == 0:
        store.wait(["closed"], timeout)


def scenario(rounds=3, slow_rank=2, delay=0.2):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = loopback_store()
    for i in range(rounds):
        with span(f"work {i}"):
            time.sleep(delay if rank == slow_rank else 0.02)
        with span(f"store barrier {i}", kind="wait"):
            store_barrier(store, f"round-{i}", world_size)
    close_store(store, world_size)
    return rounds


if __name__ == "__main__":
    torchrun_main(scenario)
