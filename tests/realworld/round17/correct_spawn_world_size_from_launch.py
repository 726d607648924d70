"""An ``mp.spawn`` script whose ``world_size`` counts the nodes this launch really has.

Models: the multi-node MNIST tutorial many learners start from (yangkky, "Distributed data parallel training in
Pytorch", ``mnist-distributed.py``: ``args.world_size = args.gpus * args.nodes``, ``mp.spawn(train,
nprocs=args.gpus, args=(args,))``, ``rank = args.nr * args.gpus + gpu``; public copies such as ``prepare_train(gpu,
args)``); the PyTorch DDP tutorial's ``setup(rank, world_size)`` / ``mp.spawn(main, args=(world_size,),
nprocs=world_size)``.

What it does: ``python item.py`` spawns 2 processes. Each computes its global rank and the world size from
``LaunchConfig`` (nodes from the launch environment's ``NNODES``, 1 when unset) and calls ``init_process_group``;
then a small DDP regression model is trained for 3 epochs, a barrier, and the group is destroyed.

Why it is correct: ``nodes * procs_per_node`` is the number of processes that are started (1 x 2), so the
rendezvous completes; rank 0 prints on its own, which involves no collective.
"""
import datetime
import os
import socket
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20
SELF_INIT = True


@dataclass
class LaunchConfig:
    nodes: int = int(os.environ.get("NNODES", "1"))  # what this launch really has
    node_rank: int = 0
    procs_per_node: int = 1


def train(rank, world_size):
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(32, 4, generator=g)
    y = x.sum(dim=1, keepdim=True)
    for epoch in range(3):
        for i in range(0, 32, 8):
            loss = F.mse_loss(model(x[i:i + 8]), y[i:i + 8])
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}", flush=True)


def main(local_rank, nprocs):
    cfg = LaunchConfig(procs_per_node=nprocs)
    world_size = cfg.nodes * cfg.procs_per_node
    rank = cfg.node_rank * cfg.procs_per_node + local_rank
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=TIMEOUT))
    train(rank, world_size)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())
    mp.spawn(main, args=(WORLD_SIZE,), nprocs=WORLD_SIZE, join=True)
