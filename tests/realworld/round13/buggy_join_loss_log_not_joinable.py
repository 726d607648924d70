"""DDP training on uneven inputs under ``Join([model])``, with a per-step loss all-reduce for the progress log.

Modelled on the PyTorch tutorial "Distributed Training with Uneven Inputs Using the Join Context Manager"
(pytorch/tutorials ``advanced_source/generic_join.rst``: ``Join([model])`` around the per-rank loop, and the
section on making a class Joinable) and on ``torch/distributed/algorithms/join.py`` (the docstring: the hooks
"shadow the collective communications of non-joined processes"; the warning that every participating Joinable
must call ``notify_join_context()`` before its own per-iteration collectives), with the DDP join hook of
``torch/nn/parallel/distributed.py`` (``_DDPJoinHook.main_hook`` shadows the forward's join notification and
the backward's bucket all-reduces). PR pytorch/pytorch #42577's warning: join "does not support custom
distributed collective operations" (there: in the model's forward pass).

Rank 0 has 5 batches, rank 1 has 3 (the tutorial's uneven-inputs setting). ``Join([model])`` lets rank 1
leave its loop early: its DDP join hook shadows exactly what DDP itself communicates in rank 0's remaining
iterations (one join all-reduce, one gradient bucket all-reduce). The bug: the loop also all-reduces the loss
for the log line every step, a collective no Joinable knows about; once rank 1 has joined, rank 0's loss
all-reduce is paired with the join context's next "how many ranks are still training" all-reduce on rank 1,
and from there on the two ranks' collectives are one call apart.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

BATCHES_PER_RANK = {0: 5, 1: 3}


def make_batches(rank):
    generator = torch.Generator().manual_seed(100 + rank)
    return [(torch.randn(4, 6, generator=generator), torch.randn(4, 1, generator=generator))
            for _ in range(BATCHES_PER_RANK[rank])]


def train(model, optimizer, batches, rank):
    world = dist.get_world_size()
    with Join([model]):  # WAITS
        for step, (x, y) in enumerate(batches):
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()  # WAITS
            optimizer.step()
            logged = loss.detach().clone()
            dist.all_reduce(logged)  # BUG
            if rank == 0:
                print(f"step {step}: mean loss {logged.item() / world:.4f}", flush=True)


def worker():
    torch.manual_seed(0)
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    train(model, optimizer, make_batches(rank), rank)  # WAITS
    print(f"rank {rank}: done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
