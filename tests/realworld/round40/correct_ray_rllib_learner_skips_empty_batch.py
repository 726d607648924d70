"""RLlib with several Learners: before a DDP update, all Learners agree whether there is data and how many minibatch
steps to take.

Source: ray-project/ray PR #66030 ("[RLlib] Skip updates if some learners don't have batches, prevent deadlocks"):
"prior to a DDP step, all learners agree that they have data available and how often they will step on any
available minibatches". Modelled on ``Learner.update`` and the DDP-wrapped ``TorchLearner`` module.

Each Learner counts its local minibatches and the count is all-reduced with ``MIN``: if any Learner has none, every
Learner skips the update together; otherwise every Learner takes the same number of DDP steps. Two Learners,
minibatch size 2, rounds of 8 and 3 rows (the second round is skipped by both).
"""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

MINIBATCH = 2


def shard(rows, rank, world):
    per, extra = divmod(rows.shape[0], world)
    start = rank * per + min(rank, extra)
    return rows[start:start + per + (1 if rank < extra else 0)]


def minibatches(batch):
    return [batch[i:i + MINIBATCH] for i in range(0, batch.shape[0] - MINIBATCH + 1, MINIBATCH)]


def agreed_num_minibatches(local):
    n = torch.tensor([local])
    dist.all_reduce(n, op=dist.ReduceOp.MIN)
    return int(n.item())


def update(module, optimizer, batch):
    mbs = minibatches(batch)
    n = agreed_num_minibatches(len(mbs))
    if n == 0:
        return {"num_minibatches": 0}
    for mb in mbs[:n]:
        optimizer.zero_grad()
        loss = module(mb).pow(2).mean()
        loss.backward()
        optimizer.step()
    return {"num_minibatches": n, "loss": loss.item()}


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    module = DDP(torch.nn.Linear(3, 2))
    optimizer = torch.optim.SGD(module.parameters(), lr=0.05)
    for round_idx, rows in enumerate((8, 3)):
        train_batch = torch.randn(rows, 3, generator=torch.Generator().manual_seed(round_idx))
        stats = update(module, optimizer, shard(train_batch, rank, world))
        print(f"[learner {rank}] round {round_idx}: {stats}", flush=True)
    dist.barrier()
    print(f"[learner {rank}] done", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
