"""dion: NorMuon's mega-batched orthogonalization over FSDP2 shards, padded to a rank-consistent size.

Source: microsoft/dion PR #74 ("Fix megabatch_orthogonalize_async hang on empty FSDP2 shards", 2026-05) and its
follow-up PR #75; `dion/megabatch_base.py` `megabatch_orthogonalize_async`, the sharded ("mega-batched FSDP2")
path.

Three (4, 6) weights over 3 ranks under FSDP2: ranks 0 and 1 hold (2, 6) row shards, rank 2 an empty (0, 6)
shard. One all-to-all gives each rank one whole matrix, Newton-Schulz orthogonalizes it, a second all-to-all sends
the slices back. As the PRs fix it, every rank pads its shard to `padded_local_size = ceil(global / world_size)`
(PR #75's form; PR #74 all-reduced the maximum), so the all-to-all sees the same per-pair sizes everywhere; the
receiver strips each source rank's padding (the sizes follow from FSDP2's contiguous chunking) before
orthogonalizing, and the sender's slices are padded again for the way back. Every rank prints the same global
weight sum after two steps.
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

KIND = "correct"
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


def _pad_to(t: torch.Tensor, size: int, dim: int) -> torch.Tensor:
    shape = list(t.shape)
    shape[dim] = size - t.shape[dim]
    return torch.cat([t, t.new_zeros(shape)], dim=dim)


def megabatch_orthogonalize(U: list[torch.Tensor], comm_dim: int, rank: int, world_size: int,
                            global_comm_dim_size: int, group=None):
    """Orthogonalize N same-shape row-sharded matrices; each rank does N / world_size whole matrices."""
    N = len(U)
    pad_n = (world_size - N % world_size) % world_size
    U_work = U + [torch.zeros_like(U[0])] * pad_n
    per_rank = len(U_work) // world_size
    # Every rank pads its shard to the same size, so the all-to-all sees uniform per-pair sizes (PR #74/#75).
    padded_local_size = -(-global_comm_dim_size // world_size)
    sizes = [max(0, min(padded_local_size, global_comm_dim_size - r * padded_local_size)) for r in range(world_size)]
    input_chunks = [torch.stack([_pad_to(u, padded_local_size, comm_dim)
                                 for u in U_work[r * per_rank:(r + 1) * per_rank]]) for r in range(world_size)]
    output_chunks = [torch.empty_like(input_chunks[rank]) for _ in range(world_size)]
    dist.all_to_all(output_chunks, input_chunks, group=group)
    full = torch.cat([c.narrow(comm_dim, 0, sizes[r]) for r, c in enumerate(output_chunks)], dim=comm_dim)
    ortho = newton_schulz(full)
    send_back = [_pad_to(s, padded_local_size, comm_dim) for s in ortho.split(sizes, dim=comm_dim)]
    received = [torch.empty_like(input_chunks[r]) for r in range(world_size)]
    dist.all_to_all(received, send_back, group=group)
    out = torch.cat(received, dim=0).narrow(comm_dim, 0, U[0].size(comm_dim))
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
        updates = megabatch_orthogonalize(U, comm_dim=-2, rank=dist.get_rank(), world_size=dist.get_world_size(),
                                          global_comm_dim_size=self.params[0].shape[0])
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
        optimizer.step()
        optimizer.zero_grad()
    local = sum(p.to_local().sum() for p in model.parameters())
    total = local.clone()
    dist.all_reduce(total)
    print(f"rank {rank}: local gate shards {shapes}, 2 NorMuon steps, global weight sum {total.item():.4f}",
          flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
