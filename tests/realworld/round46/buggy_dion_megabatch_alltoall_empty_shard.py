"""dion: NorMuon's mega-batched orthogonalization all-to-alls FSDP2 shards whose size differs between ranks.

Source: microsoft/dion PR #74 ("Fix megabatch_orthogonalize_async hang on empty FSDP2 shards", 2026-05) and its
follow-up PR #75; `dion/megabatch_base.py` `megabatch_orthogonalize_async`, the sharded ("mega-batched FSDP2")
path.

Muon-style optimizers orthogonalize whole matrices, but FSDP2 leaves each rank a row shard of every 2D weight. The
mega-batched path gives each rank whole matrices to work on: it groups the same-shape parameters, and one
`dist.all_to_all` sends rank r's shard of the r-th matrix to rank r, which concatenates the shards, runs
Newton-Schulz on the full matrix, and a second all-to-all sends the slices back. FSDP2 chunks dim 0 contiguously
(`ceil(rows / world)` per rank), so a weight with fewer rows than the group fills some ranks with empty `(0, D)`
shards -- the PR's per-head gate of shape (18, 2304) over 8 ranks: six (3, 2304) shards and two (0, 2304). Here
three (4, 6) weights over 3 ranks: ranks 0 and 1 hold (2, 6), rank 2 holds (0, 6). Every rank builds its
`input_chunks` from its own local shard, so rank 2 offers and expects (1, 0, 6) pieces while its peers send
(1, 2, 6): "per-target chunk shapes diverge across ranks" and the all-to-all after the first backward never matches
(an NCCL watchdog timeout in the PR; on gloo the size check aborts a rank and the others lose their peer). The fix
(PR #74): pad every local shard to a rank-consistent `padded_local_size` (the all-reduced maximum; PR #75 computes
`ceil(global / world_size)` instead) before the all-to-all and strip the padding afterwards.
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 15

ROWS, COLS = 4, 6  # per-head gates: fewer rows than the 3-rank group needs to give every rank two


def newton_schulz(G: torch.Tensor, steps: int = 5, eps: float = 1e-7) -> torch.Tensor:
    """Muon's quintic Newton-Schulz iteration, batched over dim 0."""
    a, b, c = 3.4445, -4.7750, 2.0315
    X = G / (G.norm(dim=(-2, -1), keepdim=True) + eps)
    for _ in range(steps):
        A = X @ X.transpose(-2, -1)
        X = a * X + (b * A + c * A @ A) @ X
    return X


def megabatch_orthogonalize(U: list[torch.Tensor], comm_dim: int, rank: int, world_size: int, group=None):
    """Orthogonalize N same-shape row-sharded matrices; each rank does N / world_size whole matrices."""
    N = len(U)
    pad_n = (world_size - N % world_size) % world_size
    U_work = U + [torch.zeros_like(U[0])] * pad_n
    per_rank = len(U_work) // world_size
    input_chunks = [torch.stack(U_work[r * per_rank:(r + 1) * per_rank]) for r in range(world_size)]  # BUG
    output_chunks = [torch.empty_like(input_chunks[rank]) for _ in range(world_size)]
    dist.all_to_all(output_chunks, input_chunks, group=group)  # WAITS
    full = torch.cat(output_chunks, dim=comm_dim)  # this rank's matrices, whole
    ortho = newton_schulz(full)
    send_back = list(ortho.split(U[0].size(comm_dim), dim=comm_dim))  # every shard assumed this size
    received = [torch.empty_like(input_chunks[r]) for r in range(world_size)]
    dist.all_to_all(received, send_back, group=group)
    out = torch.cat(received, dim=0)
    return [out[i] for i in range(N)]


class GateBank(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.gates = nn.ParameterList([nn.Parameter(torch.randn(ROWS, COLS) * 0.2) for _ in range(3)])

    def forward(self, x):
        return sum((x @ g.t()).tanh() for g in self.gates)


class NorMuon:
    def __init__(self, params, lr=0.02, momentum=0.95):
        self.params, self.lr, self.momentum = list(params), lr, momentum
        self.bufs = [torch.zeros_like(p.to_local()) for p in self.params]

    @torch.no_grad()
    def step(self):
        U = []
        for p, buf in zip(self.params, self.bufs):
            buf.mul_(self.momentum).add_(p.grad.to_local())
            U.append(buf.clone())
        updates = megabatch_orthogonalize(U, comm_dim=-2, rank=dist.get_rank(),  # WAITS
                                          world_size=dist.get_world_size())
        for p, u in zip(self.params, updates):
            p.to_local().add_(u, alpha=-self.lr)

    def zero_grad(self):
        for p in self.params:
            p.grad = None


def worker():
    rank = dist.get_rank()
    model = GateBank()
    fully_shard(model)
    shapes = [tuple(p.to_local().shape) for p in model.parameters()]
    optimizer = NorMuon(model.parameters())
    torch.manual_seed(100 + rank)
    for _ in range(2):
        x = torch.randn(8, COLS)
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()  # WAITS
        optimizer.zero_grad()
    local = sum(p.to_local().sum() for p in model.parameters())
    total = local.clone()
    dist.all_reduce(total)
    print(f"rank {rank}: local gate shards {shapes}, 2 NorMuon steps, global weight sum {total.item():.4f}",
          flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
