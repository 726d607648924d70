"""A DDP communication hook that all-reduces every gradient bucket, zero buckets included (it only counts them).

Models: the DDP communication-hook docs (``docs/source/ddp_comm_hooks.rst``: ``register_comm_hook``, user-defined
communication strategies) and ``torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py`` (``allreduce_hook``
all-reduces ``bucket.buffer()`` asynchronously and divides by the group size in a ``then`` callback). The script is a
learner's multi-task DDP script with its own hook that also counts, for the log, the buckets that carry no gradient
on this rank.

What it does: 2 ranks. A shared trunk feeds a 4-way classification head and an auxiliary masked-token head over a
4200-token vocabulary; the auxiliary loss is added only when the batch carries auxiliary labels (rank 1's shard has
none), with ``find_unused_parameters=True``; 4 training steps. The large auxiliary head has a bucket of its own,
all zeros on rank 1.

Why it is correct: whether a bucket is zero differs per rank, but here it only feeds a counter; every rank
all-reduces every bucket, so the ranks make the same all-reduces in the same order and the averaged gradients are
right (rank 1 contributes zeros for the head it did not use).
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

AUX_VOCAB = 4200


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(16, 64), nn.ReLU())
        self.head = nn.Linear(64, 4)
        self.aux = nn.Linear(64, AUX_VOCAB)

    def forward(self, x, with_aux):
        h = self.trunk(x)
        return self.head(h), (self.aux(h) if with_aux else None)


def skip_zero_allreduce_hook(state, bucket):
    """All-reduce and average every bucket; count the ones that carry no gradient on this rank (for the log)."""
    buf = bucket.buffer()
    if not torch.any(buf):
        state["zero_buckets"] += 1  # a per-rank fact: it must not decide whether this rank communicates
    world = dist.get_world_size()
    fut = dist.all_reduce(buf, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0].div_(world))


def shard(rank, step):
    g = torch.Generator().manual_seed(10 * step + rank)
    x = torch.randn(8, 16, generator=g)
    y = torch.randint(0, 4, (8,), generator=g)
    aux_y = torch.randint(0, AUX_VOCAB, (8,), generator=g) if rank == 0 else None  # rank 1: no aux labels
    return x, y, aux_y


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(MultiTask(), find_unused_parameters=True)
    state = {"zero_buckets": 0}
    model.register_comm_hook(state, skip_zero_allreduce_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        x, y, aux_y = shard(rank, step)
        logits, aux_logits = model(x, with_aux=aux_y is not None)
        loss = F.cross_entropy(logits, y)
        if aux_logits is not None:
            loss = loss + 0.1 * F.cross_entropy(aux_logits, aux_y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"[rank {rank}] step {step}: loss {loss.item():.3f}, zero buckets so far {state['zero_buckets']}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
