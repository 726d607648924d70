"""SwAV-style distributed Sinkhorn-Knopp that stops on a tolerance measured on the rank's own columns.

Models: facebookresearch/swav ``main_swav.py`` ``distributed_sinkhorn`` (a fixed ``sinkhorn_iterations``; the row
sums are all-reduced in every iteration, the column sums are local), its copies such as theolepage/sslsv
``sslsv/methods/SwAV/SinkhornKnopp.py``, and the ``while error > tol`` loop of Megatron-LM's (single-process)
``sinkhorn`` router helper, which a learner borrowed to save iterations.

What it does: two ranks train a tiny SwAV-like model (an encoder, L2-normalised features, a prototype layer of
K = 8) with DDP. For each batch the codes are computed by ``distributed_sinkhorn``: the total and, in every
iteration, the row sums are all-reduced over the ranks, the columns are normalised locally, and the loop stops as
soon as the column marginals are within ``TOL`` of uniform.

The bug: the stopping test reads ``err``, computed from the rank's own columns (``# BUG``), so each rank stops
after its own number of iterations. Rank 0's features are spread out, rank 1's are crowded around two directions;
on the first batch rank 1's columns are within ``TOL`` after 10 iterations, rank 0's after 11. Rank 1 leaves the
loop and goes on to ``loss.backward()``, whose DDP gradient all-reduce meets rank 0's 11th row-sum all-reduce:
gloo aborts on the size mismatch (8 values against the gradient bucket).
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

K = 8
EPSILON = 0.05
TOL = 1e-3
MAX_ITERS = 100


class SwAVHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
        self.prototypes = nn.Linear(8, K, bias=False)

    def forward(self, x):
        z = F.normalize(self.encoder(x), dim=1)
        return self.prototypes(z)


@torch.no_grad()
def distributed_sinkhorn(out):
    world = dist.get_world_size()
    Q = torch.exp(out / EPSILON).t()  # K x B
    B = Q.shape[1] * world
    sum_Q = torch.sum(Q)
    dist.all_reduce(sum_Q)
    Q /= sum_Q
    iters = 0
    while iters < MAX_ITERS:
        sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
        dist.all_reduce(sum_of_rows)  # WAITS
        Q /= sum_of_rows
        Q /= K
        cols = torch.sum(Q, dim=0, keepdim=True)
        err = (cols * B - 1).abs().max()
        Q /= cols
        Q /= B
        iters += 1
        if err < TOL:  # BUG
            break
    Q *= B
    return Q.t(), iters


def make_batches(rank, steps=4, batch=16):
    g = torch.Generator().manual_seed(100 + rank)
    batches = []
    for _ in range(steps):
        if rank == 0:
            x = torch.randn(batch, 16, generator=g)
        else:  # crowded features: two directions plus a little noise
            centers = torch.randn(2, 16, generator=g)
            pick = torch.randint(0, 2, (batch,), generator=g)
            x = centers[pick] + 0.05 * torch.randn(batch, 16, generator=g)
        batches.append(x)
    return batches


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(SwAVHead())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, x in enumerate(make_batches(rank)):
        scores = model(x)
        q, iters = distributed_sinkhorn(scores.detach())  # WAITS
        loss = -(q * F.log_softmax(scores / 0.1, dim=1)).sum(dim=1).mean()
        opt.zero_grad()
        loss.backward()  # WAITS
        opt.step()
        print(f"rank {rank} step {step}: sinkhorn iterations {iters}, loss {loss.item():.4f}")
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
