"""An incremental checkpointer for a ``ZeroRedundancyOptimizer`` that leaves ``save`` early when the rank's own
optimizer shard has not changed since its last save.

Models: torch ``ZeroRedundancyOptimizer`` (``_partition_parameters``: parameters sorted by size, each given to the
rank with the smallest total; ``optim`` is the local optimizer over the rank's partition only; ``step`` ends with
the parameter broadcasts); Lightning ``ModelCheckpoint._should_skip_saving_checkpoint`` (a skip keyed on the
global step); incremental / delta checkpointing of sharded state (write only what changed); sgl-project/sglang
PRs #27489 and #38273 (a method that returns early on rank-local state before its ``all_reduce``).

What it does: 2 ranks fine-tune a classifier on frozen pretrained embeddings (``nn.Embedding`` with
``requires_grad=False``) with DDP and ``ZeroRedundancyOptimizer(model.parameters(), Adam)``. Every 2 steps the
``ShardedOptimCheckpointer`` hashes the rank's optimizer shard (``_helpers_ckpt.state_digest``), writes it if it
changed, gathers every rank's last-written step with ``all_gather_object``, and rank 0 writes the manifest before a
closing barrier.

The bug: the unchanged-shard test returns from ``save`` before the gather and the barrier. ZeRO puts the 1,536-
element embedding on rank 0 and every trainable tensor on rank 1; rank 0's shard has no gradients and no Adam state,
so from the second save on it never changes. At step 4 rank 0 returns early and goes on training while rank 1
waits in ``all_gather_object``; rank 0 waits in the next step's DDP all-reduce.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_ckpt import state_digest, write_manifest
from _helpers_tmp import remove_tmpdir, shared_tmpdir

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 8
SAVE_EVERY = 2


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(64, 24)
        self.embed.weight.requires_grad_(False)  # frozen pretrained embeddings
        self.head = nn.Sequential(nn.Linear(24, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, tokens):
        return self.head(self.embed(tokens).mean(dim=1))


class ShardedOptimCheckpointer:
    def __init__(self, folder, optimizer):
        self.folder = folder
        self.optimizer = optimizer
        self.rank = dist.get_rank()
        self._last_digest = None
        self._last_written = -1

    def save(self, step):
        shard = self.optimizer.optim.state_dict()  # this rank's partition
        digest = state_digest(shard)
        if digest == self._last_digest:
            return  # BUG
        torch.save(shard, os.path.join(self.folder, f"optim-rank{self.rank}-step{step}.pt"))
        self._last_digest, self._last_written = digest, step
        shard_steps = [None] * dist.get_world_size()
        dist.all_gather_object(shard_steps, self._last_written)  # WAITS
        if self.rank == 0:
            write_manifest(self.folder, step, shard_steps)
            print(f"step {step}: manifest {shard_steps}", flush=True)
        dist.barrier()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    folder = shared_tmpdir("r26_zero_")
    try:
        model = DDP(Classifier())
        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-2)
        ckpt = ShardedOptimCheckpointer(folder, optimizer)
        g = torch.Generator().manual_seed(20 + rank)
        for step in range(1, STEPS + 1):
            tokens = torch.randint(0, 64, (8, 5), generator=g)
            labels = tokens[:, 0] % 4
            loss = F.cross_entropy(model(tokens), labels)
            optimizer.zero_grad()
            loss.backward()  # WAITS
            optimizer.step()
            if step % SAVE_EVERY == 0:
                ckpt.save(step)  # WAITS
        dist.barrier()
        if rank == 0:
            print(f"done; final loss {loss.item():.4f}", flush=True)
    finally:
        if rank == 0:
            remove_tmpdir(folder)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
