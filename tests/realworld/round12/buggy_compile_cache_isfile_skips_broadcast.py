"""A compiled-source cache whose write (and the broadcast inside it) is guarded by each rank's own ``isfile``.

Source: modelled on unslothai/unsloth-zoo PR #967 ("``create_new_function()`` performed distributed broadcasts and
barriers behind rank-local filesystem and error conditions. Under ``torchrun``, rank 0 could write a compiled cache
file before another rank evaluated the surrounding ``os.path.isfile()`` guard. The later rank would see the file,
skip the collective, and continue while rank 0 remained blocked"; the fix evaluates file existence on rank 0 only
and broadcasts the decision), ``unsloth_zoo/compiler.py`` ``create_new_function`` / ``write_file`` and
``unsloth_zoo/utils.py`` ``distributed_function`` (in the helper module ``r12_compile_cache.py``). The patched
function is a loss used by the model; the model then trains under DDP.

The bug: ``create_new_function`` asks ``os.path.isfile`` on each rank. Rank 0 gets there first, finds no file, and
enters ``distributed_function``: it writes the file and waits in ``broadcast_object_list`` for the others. Rank 1
arrives later (``import_trainer_modules``: a slower cold import on the other ranks, a stand-in that sleeps 1.5 s),
finds the file rank 0 has just written, skips the branch and goes on to build its DDP model, whose constructor's
collectives meet rank 0's broadcast. The call chain is three deep: ``patch_trainer`` -> ``create_new_function`` ->
``distributed_function``.
"""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import r12_compile_cache as cache

KIND = "buggy"
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
    if not os.path.isfile(location):  # BUG
        cache.distributed_function(1, cache.write_file, location, source)  # WAITS
    return cache.load_module(name, location)


def patch_trainer():
    module = create_new_function("unsloth_fast_mse_loss", FAST_LOSS_SOURCE)  # WAITS
    return module.fast_mse_loss


def worker():
    rank = dist.get_rank()
    cache.set_up_cache_dir()
    try:
        train(rank)  # WAITS
    finally:
        cache.remove_cache_dir()  # rank 0


def train(rank):
    import_trainer_modules()
    loss_fn = patch_trainer()  # WAITS
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)))  # WAITS
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
