"""Decentralised (gossip) SGD over pairwise process groups, the peers visited in each rank's phone-book order.

Models facebookresearch/stochastic_gradient_push: ``gossip/graph_manager.py`` (a ``phone_book`` of peers built
with ``_rotate_forward(rank, i)``, so every rank lists its peers starting from its own position) and
``gossip/distributed.py`` / ``gossip/gossiper.py`` (``GossipDataParallel`` mixes the parameters with the
peers after each local step, one two-member process group per edge). Here 3 workers on a complete graph
average their flattened parameters with each neighbour through ``all_reduce`` on that edge's group.

The groups are made correctly (all three pairs, same order, on every rank). The bug: ``gossip`` loops over
``self.graph.get_peers()``, the rank-relative phone book: rank 0 mixes with 1 then 2, rank 1 with 2 then 0,
rank 2 with 0 then 1. Each rank's first all-reduce is on a pair whose other member is in its own first
all-reduce on a different pair (0 waits for 1 on {0,1}, 1 waits for 2 on {1,2}, 2 waits for 0 on {0,2}):
a cycle, no collective can complete, and all three ranks time out in the first step's gossip. Each
group on its own sees a perfectly ordinary single call.

Hand-written stand-ins: the graph manager, the wrapper and a linear model on per-rank regression shards.
"""
import datetime
import itertools

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 20


class CompleteGraphManager:
    def __init__(self, rank, world_size):
        self.rank, self.world_size = rank, world_size
        self.phone_book = [[(r + i) % world_size for i in range(1, world_size)] for r in range(world_size)]
        self.edges = list(itertools.combinations(range(world_size), 2))

    def get_peers(self):
        return self.phone_book[self.rank]


class GossipDataParallel(nn.Module):
    def __init__(self, module, graph):
        super().__init__()
        self.module, self.graph = module, graph
        self.edge_groups = {
            edge: dist.new_group(list(edge), timeout=datetime.timedelta(seconds=TIMEOUT)) for edge in graph.edges
        }

    def forward(self, x):
        return self.module(x)

    def _mix_with(self, edge):
        flat = parameters_to_vector(self.module.parameters()).detach()
        dist.all_reduce(flat, group=self.edge_groups[edge])  # WAITS
        vector_to_parameters(flat / 2, self.module.parameters())

    @torch.no_grad()
    def gossip(self):
        for peer in self.graph.get_peers():  # BUG
            self._mix_with(tuple(sorted((self.graph.rank, peer))))  # WAITS


def local_shard(rank):
    g = torch.Generator().manual_seed(10 + rank)
    x = torch.randn(48, 4, generator=g)
    w = torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    return x, x @ w + 0.1 * rank


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    model = GossipDataParallel(nn.Linear(4, 1), CompleteGraphManager(rank, world))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = local_shard(rank)
    for step in range(30):
        idx = torch.arange(step * 8, step * 8 + 8) % len(x)
        loss = nn.functional.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.gossip()  # WAITS
        if step % 10 == 9:
            print(f"[rank {rank}] step {step} local loss {loss.item():.4f}")
    spread = parameters_to_vector(model.parameters()).detach()
    gathered = [torch.empty_like(spread) for _ in range(world)]
    dist.all_gather(gathered, spread)
    if rank == 0:
        print("max parameter disagreement:", max((g - spread).abs().max().item() for g in gathered))


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
