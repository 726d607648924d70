"""A barrier made of key-value store calls (add + wait): coordination outside the collective stream."""

import time
from datetime import timedelta

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def store_barrier(store, name, world_size, timeout=timedelta(seconds=30)):
    """Return once ``world_size`` processes have called ``store_barrier`` with this ``name``.

    Each arrival adds 1 to a counter; the last one sets an "open" key; everyone waits for that key.
    Keys are never reset, so every barrier needs a new name.
    """
    if store.add(f"{name}/arrived", 1) == world_size:
        store.set(f"{name}/open", "1")
    store.wait([f"{name}/open"], timeout)


def scenario(rounds=3, slow_rank=2, delay=0.2):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    # the store the group was made with: a TCPStore that torchrun's agent (or barrierlab's kernel) serves
    store = dist.group.WORLD.get_group_store()
    for i in range(rounds):
        with span(f"work {i}"):
            time.sleep(delay if rank == slow_rank else 0.02)
        with span(f"store barrier {i}", kind="wait"):
            store_barrier(store, f"round-{i}", world_size)
    return rounds


if __name__ == "__main__":
    torchrun_main(scenario)
