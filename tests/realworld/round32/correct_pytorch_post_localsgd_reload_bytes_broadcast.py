"""PyTorch's post-local SGD reload test: the checkpoint serialised in memory by rank 0 and broadcast, no shared file.

Models: pytorch/pytorch issue #84886 and PR #194614 ("Fix post-local SGD checkpoint reload race": "Rank 0 created
the temporary checkpoint and all ranks synchronized after it was written. However, there was no synchronization
after loading. Rank 0 could complete the test first, leave the temporary-file context, and delete the checkpoint
before another rank opened it, causing FileNotFoundError"). Code modelled (written here, not copied):
``torch/testing/_internal/distributed/distributed_test.py`` ``_test_post_localSGD_optimizer_step_reload`` (a DDP
model with ``post_localSGD_hook``, ``PostLocalSGDOptimizer`` over SGD with a ``PeriodicModelAverager``, training
steps past the warm-up, the optimizer state reloaded into a fresh optimizer on every rank and the averager's step
checked), and the next test of the suite building its DDP model. The real ``PostLocalSGDState``,
``post_localSGD_hook``, ``PostLocalSGDOptimizer`` and ``PeriodicModelAverager`` of torch are used.

The fix modelled is PR #194614's: "Serialize the checkpoint into an in-memory buffer on rank 0 and broadcast the
bytes through the process group. Each rank then loads from its own BytesIO buffer" -- no file whose lifetime rank 0
owns. 2 ranks; rank 1 still reaches its load 1.0 s after rank 0 (the PR's reproduction delay, a stand-in) and waits
for the bytes in the broadcast; both reload the averager's step and run the next test.
"""

import datetime
import io
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import PostLocalSGDState, post_localSGD_hook
from torch.distributed.algorithms.model_averaging import averagers
from torch.distributed.optim import PostLocalSGDOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

WARMUP_STEPS = 10
PERIOD = 4
NUM_STEPS = 20
SLOW_RANK_DELAY_SECONDS = 1.0


def make_ddp_model(rank):
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
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
    if rank != 0:
        time.sleep(SLOW_RANK_DELAY_SECONDS)
    payload = [None]
    if rank == 0:
        buffer = io.BytesIO()
        torch.save({"optimizer_state_dict": optimizer.state_dict()}, buffer)
        payload = [buffer.getvalue()]
    dist.broadcast_object_list(payload, src=0)
    checkpoint = torch.load(io.BytesIO(payload[0]))
    dummy_optimizer = make_optimizer(model)
    dummy_optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    assert dummy_optimizer.averager.step == optimizer.averager.step == NUM_STEPS
    print(f"[rank {rank}] reload: averager step {dummy_optimizer.averager.step}", flush=True)


def test_post_localSGD_optimizer_parity(rank):
    model = make_ddp_model(rank)
    optimizer = make_optimizer(model)
    loss = train(model, optimizer, rank, 12)
    print(f"[rank {rank}] parity: final loss {loss:.4f}", flush=True)


def worker():
    rank = dist.get_rank()
    test_post_localSGD_optimizer_step_reload(rank)
    test_post_localSGD_optimizer_parity(rank)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
