"""Resuming after an elastic restart from node-local checkpoints: a rank that finds its own file returns early.

Modelled on pytorch/elastic ``examples/imagenet/main.py`` (``load_checkpoint``: "Loads a local checkpoint (if
any). Otherwise, checks to see if any of the neighbors have a non-zero state"; checkpoints written to each node's
local disk by its local rank 0; ``tmp_process_group(backend="gloo")``; the epochs all-reduced to find the most
up-to-date rank; the snapshot broadcast from it) as several copies of that example have it, with a ``return
state`` right after a successful local ``state.load(...)`` (the neighbours' exchange then runs only on ranks
that found nothing). The restart itself is what ``torchrun --max-restarts`` does after a node failure.

Two ranks stand for two nodes with their own disks (``node0/`` and ``node1/``). The previous attempt left a
checkpoint of epoch 1 on node 0; node 1 is a replacement host with an empty disk (stand-in:
``previous_attempt_left_checkpoint``). Rank 0 finds its file, loads it and returns: it starts at epoch 2 and
goes into DDP's gradient all-reduce. Rank 1 finds nothing and enters the exchange with its neighbours, creating
the temporary gloo group that rank 0 never creates, and waits there. (The group's timeout is set to the item's
``TIMEOUT``; the example uses the default.)
"""

import contextlib
import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 4


def run_dir():
    return os.path.join(tempfile.gettempdir(), f"r13_elastic_{os.environ.get('MASTER_PORT', 'local')}")


def checkpoint_file(rank):
    return os.path.join(run_dir(), f"node{rank}", "checkpoint.pth.tar")


class State:
    def __init__(self, model, optimizer):
        self.epoch = -1
        self.model = model
        self.optimizer = optimizer

    def capture_snapshot(self):
        return {"epoch": self.epoch, "state_dict": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def apply_snapshot(self, obj):
        self.epoch = obj["epoch"]
        self.model.load_state_dict(obj["state_dict"])
        self.optimizer.load_state_dict(obj["optimizer"])

    def load(self, path):
        self.apply_snapshot(torch.load(path))


@contextlib.contextmanager
def tmp_process_group(backend):
    cpu_pg = dist.new_group(backend=backend, timeout=datetime.timedelta(seconds=TIMEOUT))  # WAITS
    try:
        yield cpu_pg
    finally:
        dist.destroy_process_group(cpu_pg)


def load_checkpoint(path, model, optimizer):
    state = State(model, optimizer)
    if os.path.isfile(path):
        print(f"=> loading checkpoint file: {path}", flush=True)
        state.load(path)
        return state  # BUG
    with tmp_process_group(backend="gloo") as pg:  # WAITS
        rank = dist.get_rank(group=pg)
        epochs = torch.zeros(dist.get_world_size(), dtype=torch.int32)
        epochs[rank] = state.epoch
        dist.all_reduce(epochs, op=dist.ReduceOp.SUM, group=pg)
        max_epoch, max_rank = (t.item() for t in torch.max(epochs, dim=0))
        if max_epoch == -1:
            return state
        objects = [state.capture_snapshot() if rank == max_rank else None]
        dist.broadcast_object_list(objects, src=max_rank, group=pg)
        if rank != max_rank:
            state.apply_snapshot(objects[0])
        dist.barrier(group=pg)
    return state


def save_checkpoint(state, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(state.capture_snapshot(), path + ".tmp")
    os.rename(path + ".tmp", path)


def previous_attempt_left_checkpoint(rank):
    # stand-in for the failed attempt: node 0 survived with its epoch-1 checkpoint, node 1 is a fresh host
    if rank == 0:
        torch.manual_seed(1)
        model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        # the DDP-wrapped model's keys, as the example saves them
        snapshot = {"epoch": 1, "state_dict": {f"module.{k}": v for k, v in model.state_dict().items()},
                    "optimizer": optimizer.state_dict()}
        os.makedirs(os.path.dirname(checkpoint_file(0)), exist_ok=True)
        torch.save(snapshot, checkpoint_file(0))


def train(model, optimizer, batches):
    for x, y in batches:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
    return loss.item()


def worker():
    rank = dist.get_rank()
    try:
        previous_attempt_left_checkpoint(rank)
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        state = load_checkpoint(checkpoint_file(rank), model, optimizer)  # WAITS
        start_epoch = state.epoch + 1
        print(f"rank {rank}: starting at epoch {start_epoch}", flush=True)
        generator = torch.Generator().manual_seed(20 + rank)
        batches = [(torch.randn(4, 6, generator=generator), torch.randint(0, 2, (4,), generator=generator))
                   for _ in range(3)]
        for epoch in range(start_epoch, EPOCHS):
            state.epoch = epoch
            loss = train(model, optimizer, batches)  # WAITS
            save_checkpoint(state, checkpoint_file(rank))
            print(f"rank {rank}: epoch {epoch} loss {loss:.4f}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(run_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
