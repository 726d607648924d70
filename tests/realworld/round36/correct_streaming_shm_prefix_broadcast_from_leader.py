"""MosaicML Streaming with the shared-memory prefix drawn by the leader and broadcast to every rank, as later versions
of ``StreamingDataset.__init__`` do ("Add a coordinated random prefix to all shm names") -- the fix of issue #145.

Models: mosaicml/streaming issue #145 ("Training hang at start when running on multi-gpu"; root cause given in the
thread: "Without setting the seed inside the main script, all the ranks generates a unique prefix_int which is not
expected and this leads to worker_barrier being hanged since it expects all the ranks to generate the same
prefix_int"; workaround: seed every rank, e.g. ``composer.utils.reproducibility.seed_all``). Code modelled (written
here, not copied): ``streaming/base/dataset.py`` -- ``StreamingDataset.__init__`` (the local leader prepares
``index.json``, ``dist.barrier()``, ``prefix_int = np.random.randint(1 << 24)``, ``self._prefix = f'{prefix_int:06x}'``,
the worker barrier built from ``{prefix}_barrier_filelock`` and ``{prefix}_barrier`` shared memory, every local rank
joining it before iterating); ``streaming/base/shared/barrier.py`` -- ``SharedBarrier`` (a counter of arrivals that
each process polls with a short sleep until every expected process has arrived). Stand-ins: a file per arrival in a
folder named after the prefix instead of shared memory, a 20 s deadline on the poll that the real barrier does not
have (so the run ends), and a tiny DDP model trained on the samples. The broadcast is the later
``StreamingDataset.__init__``'s (``if world.is_leader: tensor[0] = prefix_int``, ``dist.broadcast(tensor, 0)``).

Both ranks still draw unseeded prefixes, but rank 1 takes rank 0's from the broadcast: one barrier, 2 of 2 arrivals,
then 2 DDP steps per rank. 2 ranks.
"""

import datetime
import json
import os
import shutil
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

TICK = 0.007
BARRIER_DEADLINE = 20.0


class SharedBarrier:
    def __init__(self, root, prefix, num_procs):
        self.dirname = os.path.join(root, f"{prefix}_barrier")
        self.num_procs = num_procs
        os.makedirs(self.dirname, exist_ok=True)

    def __call__(self, proc_id):
        open(os.path.join(self.dirname, f"arrived_{proc_id}"), "w").close()
        deadline = time.monotonic() + BARRIER_DEADLINE
        while len(os.listdir(self.dirname)) < self.num_procs:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.dirname}: {len(os.listdir(self.dirname))} of {self.num_procs} arrived")
            time.sleep(TICK)


class StreamingDataset:
    def __init__(self, local, shm_root):
        rank, world = dist.get_rank(), dist.get_world_size()
        if rank == 0:  # the local leader downloads / writes the index
            samples = np.random.default_rng(5).normal(size=(16, 4)).round(3).tolist()
            with open(os.path.join(local, "index.json"), "w") as f:
                json.dump({"version": 2, "samples": samples}, f)
        dist.barrier()
        with open(os.path.join(local, "index.json")) as f:
            self.samples = torch.tensor(json.load(f)["samples"])
        prefix_int = np.random.randint(1 << 24)
        if world > 1:  # a coordinated random prefix for all shm names
            tensor = torch.zeros(1, dtype=torch.int64)
            if rank == 0:
                tensor[0] = prefix_int
            dist.broadcast(tensor, 0)
            prefix_int = int(tensor)
        self._prefix = f"{prefix_int:06x}"
        self._worker_barrier = SharedBarrier(shm_root, self._prefix, num_procs=world)
        self._worker_barrier(rank)
        self.rank, self.world = rank, world

    def __iter__(self):
        for idx in range(self.rank, len(self.samples), self.world):
            yield self.samples[idx]


def worker():
    rank = dist.get_rank()
    root = os.path.join(tempfile.gettempdir(), f"r36_streaming_{os.environ.get('MASTER_PORT', '0')}")
    local, shm_root = os.path.join(root, "local"), os.path.join(root, "shm")
    if rank == 0:
        os.makedirs(local, exist_ok=True)
        os.makedirs(shm_root, exist_ok=True)
    dist.barrier()
    dataset = StreamingDataset(local, shm_root)
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    batch = []
    for sample in dataset:
        batch.append(sample)
        if len(batch) == 4:
            x = torch.stack(batch)
            loss = F.mse_loss(model(x), x.sum(dim=1, keepdim=True))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            batch = []
    print(f"[rank {rank}] prefix {dataset._prefix}, trained on {len(dataset.samples) // 2} samples, loss {loss.item():.4f}",
          flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
