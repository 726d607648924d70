"""checkpoint-engine: every `ParameterServer.update()` barrier uses a fresh, generation-numbered key.

Source: MoonshotAI/checkpoint-engine issue #106 ("Repeated `ParameterServer.update()` calls reuse a stale
store-based barrier key", 2026-09) and PR #107 ("fix: make store-based barrier reusable across updates").
Modelled: `checkpoint_engine/ps.py` `ParameterServer.store_based_barrier()` / `update()` (the barrier was added by
PR #51 so that no rank leaves `update()` before every rank's transfer is done) and
`torch.distributed.distributed_c10d._store_based_barrier`.

The issue's root cause: every call uses the keys `store_based_barrier_key:parameter_server_barrier` and
`...:last_worker` on the long-lived root store. "For world_size=2, the first call leaves ... counter = 2,
last_worker = 1. On the second call, the counter becomes 3 and 4, so no rank observes worker_count ==
world_size. However, last_worker already exists, so both ranks return immediately from store.wait()" -- exposed
by "at least two update() calls ... followed by asymmetric work across ranks".

The fix (PR #107): "add an independent generation counter for ParameterServer.store_based_barrier(); use a
unique _store_based_barrier() group name for every invocation; keep the long-lived root TCPStore unchanged and
shared". Rank 0 pushes and publishes each version, rank 1 waits in the barrier of each update and wakes its
inference engine on version 1, then version 2.
"""

import json
import os
import tempfile
import time
from datetime import timedelta

import torch.distributed as dist
from torch.distributed import distributed_c10d

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class ParameterServer:
    def __init__(self, rank, world_size, store, weights_dir):
        self._rank = rank
        self._world_size = world_size
        self._store = store
        self._weights_path = os.path.join(weights_dir, "weights.json")
        self._store_barrier_counter = 0

    def store_based_barrier(self, timeout=timedelta(seconds=TIMEOUT)):
        self._store_barrier_counter += 1
        distributed_c10d._store_based_barrier(
            rank=self._rank,
            store=self._store,
            group_name=f"parameter_server_barrier-{self._store_barrier_counter}",
            rendezvous_count=self._world_size,
            timeout=timeout,
        )

    def _update_per_bucket(self, version):
        if self._rank == 0:  # the rank holding the new checkpoint pushes it bucket by bucket
            time.sleep(1.0)
            with open(self._weights_path, "w") as f:
                json.dump({"version": version, "w": [0.1 * version] * 4}, f)

    def update(self, version):
        self._update_per_bucket(version)
        self.store_based_barrier()


def wake_up_inference_engine(weights_path, expected):
    with open(weights_path) as f:
        weights = json.load(f)
    if weights["version"] != expected:
        raise RuntimeError(f"inference engine woke up on weights v{weights['version']}, expected v{expected}")
    return weights


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    shared = [tempfile.mkdtemp(prefix="ckpt_engine_") if rank == 0 else None]
    dist.broadcast_object_list(shared, src=0)
    store = dist.PrefixStore("checkpoint-engine", distributed_c10d._get_default_store())
    ps = ParameterServer(rank, world_size, store, shared[0])
    for version in (1, 2):
        ps.update(version)
        weights = wake_up_inference_engine(ps._weights_path, version)
        print(f"[rank {rank}] serving weights v{weights['version']}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
