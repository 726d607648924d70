"""SwAV-style distributed Sinkhorn-Knopp with a tolerance test that every rank evaluates on the same number.

Models: facebookresearch/swav ``main_swav.py`` ``distributed_sinkhorn`` (row sums all-reduced in every iteration,
column sums local), its copies such as theolepage/sslsv ``sslsv/methods/SwAV/SinkhornKnopp.py``, and the
``while error > tol`` loop of Megatron-LM's ``sinkhorn`` router helper, made safe for several ranks.

What it does: two ranks train a tiny SwAV-like model (encoder, L2-normalised features, K = 8 prototypes) with DDP;
the codes come from ``distributed_sinkhorn``, which stops once the column marginals are within ``TOL`` of uniform.
Each rank measures the error on its own columns, and the error is then all-reduced with ``MAX`` before the test, so
every rank takes the same decision in the same iteration although rank 0's spread-out features and rank 1's crowded
ones converge at different speeds. Correct: the ranks make the same sequence of all-reduces.
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
        dist.all_reduce(sum_of_rows)
        Q /= sum_of_rows
        Q /= K
        cols = torch.sum(Q, dim=0, keepdim=True)
        err = (cols * B - 1).abs().max()
        dist.all_reduce(err, op=dist.ReduceOp.MAX)
        Q /= cols
        Q /= B
        iters += 1
        if err < TOL:
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
        q, iters = distributed_sinkhorn(scores.detach())
        loss = -(q * F.log_softmax(scores / 0.1, dim=1)).sum(dim=1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step}: sinkhorn iterations {iters}, loss {loss.item():.4f}")
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
