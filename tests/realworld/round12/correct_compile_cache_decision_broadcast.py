"""A compiled-source cache whose "is the file there?" decision is taken on rank 0 and broadcast.

Source: modelled on unslothai/unsloth-zoo PR #967 (the fix: "Rank 0 decides and writes"; file existence evaluated on
rank 0 only, the decision broadcast, so every rank takes the same branch), ``unsloth_zoo/compiler.py``
``create_new_function`` / ``write_file`` and ``unsloth_zoo/utils.py`` ``distributed_function`` (in the helper module
``r12_compile_cache.py``). The patched function is a loss used by the model; the model then trains under DDP.

Correct, though it looks suspicious: the ranks reach the cache at different times (``import_trainer_modules`` is a
stand-in for a slower cold import on the other ranks, 1.5 s), a filesystem test decides whether a broadcast happens,
and the broadcast sits under an ``if``; but the test runs inside ``distributed_function`` on rank 0 only and every
rank receives its answer, so all ranks enter (or skip) the write's broadcast together.
"""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import r12_compile_cache as cache

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

FAST_LOSS_SOURCE = '''
import torch


def fast_mse_loss(prediction, target):
    diff = prediction - target
    return (diff * diff).mean()
'''


def import_trainer_modules():
    # stand-in for the cold import of the trainer's modules, slower on the ranks other than 0
    if dist.get_rank() != 0:
        time.sleep(1.5)


def create_new_function(name, source):
    location = os.path.join(cache.cache_dir(), f"{name}.py")
    must_write = cache.distributed_function(1, lambda: not os.path.isfile(location))  # rank 0 decides
    if must_write:
        cache.distributed_function(1, cache.write_file, location, source)
    return cache.load_module(name, location)


def patch_trainer():
    module = create_new_function("unsloth_fast_mse_loss", FAST_LOSS_SOURCE)
    return module.fast_mse_loss


def worker():
    rank = dist.get_rank()
    cache.set_up_cache_dir()
    try:
        train(rank)
    finally:
        cache.remove_cache_dir()  # rank 0


def train(rank):
    import_trainer_modules()
    loss_fn = patch_trainer()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(10 + rank)
    for step in range(3):
        x = torch.randn(8, 4)
        loss = loss_fn(model(x), x.sum(dim=1, keepdim=True))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank} step {step}: loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
