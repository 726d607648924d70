"""Shards split by node without equalising: one rank runs out of batches while the other still trains.

Source: webdataset/webdataset issue #225 ("DDP training problem": with ``split_by_node`` "all processes need to
receive the same number of mini-batches or they won't be able to synchronize"; unless the data divides evenly
"some nodes may get one more batch than the other nodes") and issue #188 (a rank with fewer shards hangs
training). 5 shards of 2 batches over 2 ranks: rank 0 gets 3 shards, rank 1 gets 2.

The bug: shards assigned with ``shards[rank::world_size]`` and no ``with_epoch``/equalisation.
"""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 4
SHARDS = [f"train-{i:06d}.tar" for i in range(5)]


def split_by_node(urls):
    return urls[dist.get_rank() :: dist.get_world_size()]  # BUG


def batches(urls):
    for url in urls:
        seed = int(url[6:12])
        for b in range(2):
            g = torch.Generator().manual_seed(seed * 10 + b)
            yield torch.randn(4, 6, generator=g)


def worker():
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(6, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = 0
    for x in batches(split_by_node(SHARDS)):
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        steps += 1
    dist.barrier()  # WAITS
    return steps


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
