"""RLlib with several Learners: a Learner handed an empty (or shorter) shard skips its DDP update steps while the
other Learners step.

Source: ray-project/ray PR #66030 ("[RLlib] Skip updates if some learners don't have batches, prevent deadlocks");
modelled on ``rllib/core/learner/learner.py`` ``Learner.update`` (minibatch loop) and
``rllib/core/learner/torch/torch_learner.py`` (DDP-wrapped module).

The ``LearnerGroup`` splits each train batch into one shard per Learner. When too little data was collected, a
Learner gets an empty shard (or fewer minibatches than its peers). The PR: "The naive solution is to skip empty
batches but that creates deadlocks in torch DDP as workers wait for each other's steps." Each Learner here loops over
*its own* minibatches and returns early on an empty shard; with DDP every minibatch's backward is a gradient
all-reduce, so a Learner that steps alone waits for peers that already left the update.

Two Learners, minibatch size 2: round 1 has 8 rows (4 + 4), round 2 has 3 rows (shards of 2 and 1 rows; after
``drop_last`` Learner 1 has no minibatch).

BUG: the minibatch count (and the early return) are decided per Learner.
"""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

MINIBATCH = 2


def shard(rows, rank, world):
    """LearnerGroup: contiguous split of the train batch, the remainder to the first Learners."""
    per, extra = divmod(rows.shape[0], world)
    start = rank * per + min(rank, extra)
    return rows[start:start + per + (1 if rank < extra else 0)]


def minibatches(batch):
    return [batch[i:i + MINIBATCH] for i in range(0, batch.shape[0] - MINIBATCH + 1, MINIBATCH)]


def update(module, optimizer, batch):
    mbs = minibatches(batch)
    if not mbs:  # BUG
        return {"num_minibatches": 0}
    for mb in mbs:
        optimizer.zero_grad()
        loss = module(mb).pow(2).mean()
        loss.backward()  # WAITS
        optimizer.step()
    return {"num_minibatches": len(mbs), "loss": loss.item()}


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    module = DDP(torch.nn.Linear(3, 2))
    optimizer = torch.optim.SGD(module.parameters(), lr=0.05)
    for round_idx, rows in enumerate((8, 3)):
        train_batch = torch.randn(rows, 3, generator=torch.Generator().manual_seed(round_idx))
        stats = update(module, optimizer, shard(train_batch, rank, world))  # WAITS
        print(f"[learner {rank}] round {round_idx}: {stats}", flush=True)
    dist.barrier()  # WAITS
    print(f"[learner {rank}] done", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
