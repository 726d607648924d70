"""A DDP communication hook that skips the all-reduce of a gradient bucket that is all zeros on this rank.

Models: the DDP communication-hook docs (``docs/source/ddp_comm_hooks.rst``: ``register_comm_hook``, "the hook
interface can also support user-defined communication strategies") and
``torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py`` (``allreduce_hook`` all-reduces
``bucket.buffer()`` asynchronously and divides by the group size in a ``then`` callback; ``noop_hook`` returns a
completed future wrapping the buffer, "only for headroom analysis"). The script is a learner's multi-task DDP
script that writes its own hook to "save bandwidth": a bucket whose gradients are all zero (a frozen or unused
branch) is returned as is, like ``noop_hook``, instead of being all-reduced.

What it does: 2 ranks. A shared trunk feeds a 4-way classification head and an auxiliary masked-token head over
a 4200-token vocabulary; the auxiliary loss is added only when the batch carries auxiliary labels (rank 1's shard
has none). The model is wrapped with ``find_unused_parameters=True`` and the hook is registered; 4 training steps.
DDP's first bucket is capped at 1 MiB, so the large auxiliary head has a bucket of its own.

The bug: on rank 1 the auxiliary head is unused, DDP fills its bucket with zeros, and the hook skips the
all-reduce for it, while rank 0 all-reduces the same bucket with real gradients. The ranks' first all-reduces are
of different buckets (273,000 against 1,348 elements) and gloo aborts one rank on the size mismatch (rank 0 in
the runs made for this corpus); the other rank loses its peer, both inside ``loss.backward()`` (the hook only
launches the all-reduce; DDP waits for its future at the end of the backward pass). The correct twin
all-reduces every bucket (zeros included), as ``allreduce_hook`` does: whether a bucket is zero is a per-rank fact,
the all-reduce is a group decision.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
    """All-reduce and average the bucket, but do not pay for buckets that carry no gradient here."""
    buf = bucket.buffer()
    if not torch.any(buf):  # BUG
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut
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
    model.register_comm_hook(None, skip_zero_allreduce_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        x, y, aux_y = shard(rank, step)
        logits, aux_logits = model(x, with_aux=aux_y is not None)
        loss = F.cross_entropy(logits, y)
        if aux_logits is not None:
            loss = loss + 0.1 * F.cross_entropy(aux_logits, aux_y)
        opt.zero_grad()
        loss.backward()  # WAITS
        opt.step()
        print(f"[rank {rank}] step {step}: loss {loss.item():.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
