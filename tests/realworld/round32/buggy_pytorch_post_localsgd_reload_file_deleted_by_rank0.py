"""PyTorch's post-local SGD reload test: rank 0 leaves the temporary-file context and deletes the checkpoint too early.

Models: pytorch/pytorch issue #84886 and PR #194614 ("Fix post-local SGD checkpoint reload race": "Rank 0 created
the temporary checkpoint and all ranks synchronized after it was written. However, there was no synchronization
after loading. Rank 0 could complete the test first, leave the temporary-file context, and delete the checkpoint
before another rank opened it, causing FileNotFoundError"; the PR's reproduction delays the non-zero ranks between
the barrier and ``torch.load``). Code modelled (written here, not copied):
``torch/testing/_internal/distributed/distributed_test.py`` ``_test_post_localSGD_optimizer_step_reload`` (a DDP
model with ``post_localSGD_hook``, ``PostLocalSGDOptimizer`` over SGD with a ``PeriodicModelAverager``, training
steps past the warm-up, then the optimizer state saved by rank 0 into a temporary file, a barrier, every rank
loading it into a fresh optimizer and checking the averager's step), and the next test of the suite building its
DDP model. The real ``PostLocalSGDState``, ``post_localSGD_hook``, ``PostLocalSGDOptimizer`` and
``PeriodicModelAverager`` of torch are used.

2 ranks. Rank 1 reaches its ``torch.load`` 1.0 s after the barrier (a stand-in for a slower rank, as in the PR's
reproduction); rank 0 loads at once, leaves the ``with`` block -- which removes the file -- and goes on to the next
test, where it waits in the DDP constructor's parameter broadcast. Rank 1 raises ``FileNotFoundError``.
Bug: the checkpoint shared through a file that rank 0's ``with`` block removes on exit, with nothing ordering the
removal after the other ranks' loads (BUG, on the ``with`` line); waiting: rank 0 in the next test's DDP construction (WAITS). Rank 1 fails by itself.
"""

import contextlib
import datetime
import os
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import PostLocalSGDState, post_localSGD_hook
from torch.distributed.algorithms.model_averaging import averagers
from torch.distributed.optim import PostLocalSGDOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

WARMUP_STEPS = 10
PERIOD = 4
NUM_STEPS = 20
SLOW_RANK_DELAY_SECONDS = 1.0


@contextlib.contextmanager
def temporary_checkpoint(rank):
    """The checkpoint file of the test: one name for every rank, created and removed by rank 0."""
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    path = os.path.join(tempfile.gettempdir(), f"r32_post_localsgd_{tag}.pt")
    try:
        yield path
    finally:
        if rank == 0 and os.path.exists(path):
            os.remove(path)


def make_ddp_model(rank):
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))  # WAITS
    state = PostLocalSGDState(process_group=None, subgroup=dist.group.WORLD, start_localSGD_iter=WARMUP_STEPS)
    model.register_comm_hook(state, post_localSGD_hook)
    return model


def make_optimizer(model):
    return PostLocalSGDOptimizer(
        optim=torch.optim.SGD(model.parameters(), lr=0.05),
        averager=averagers.PeriodicModelAverager(period=PERIOD, warmup_steps=WARMUP_STEPS),
    )


def train(model, optimizer, rank, steps):
    g = torch.Generator().manual_seed(rank)
    for _ in range(steps):
        x = torch.randn(6, 8, generator=g)
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return loss.item()


def test_post_localSGD_optimizer_step_reload(rank):
    model = make_ddp_model(rank)
    optimizer = make_optimizer(model)
    train(model, optimizer, rank, NUM_STEPS)
    with temporary_checkpoint(rank) as chkpt_file:  # BUG
        if rank == 0:
            torch.save({"optimizer_state_dict": optimizer.state_dict()}, chkpt_file)
        dist.barrier()
        if rank != 0:
            time.sleep(SLOW_RANK_DELAY_SECONDS)
        checkpoint = torch.load(chkpt_file)
        dummy_optimizer = make_optimizer(model)
        dummy_optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
        assert dummy_optimizer.averager.step == optimizer.averager.step == NUM_STEPS
        print(f"[rank {rank}] reload: averager step {dummy_optimizer.averager.step}", flush=True)


def test_post_localSGD_optimizer_parity(rank):
    model = make_ddp_model(rank)  # WAITS
    optimizer = make_optimizer(model)
    loss = train(model, optimizer, rank, 12)
    print(f"[rank {rank}] parity: final loss {loss:.4f}", flush=True)


def worker():
    rank = dist.get_rank()
    test_post_localSGD_optimizer_step_reload(rank)
    test_post_localSGD_optimizer_parity(rank)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
