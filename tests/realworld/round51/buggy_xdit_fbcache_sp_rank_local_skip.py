"""xDiT: First-Block Cache under Ulysses sequence parallelism decides to skip the remaining blocks on each rank alone.

Source: xdit-project/xDiT issue #502 (2025, "Potential Deadlock in FBCache with Sequence Parallelism"): "the
problem occurs because the computed differences on each GPU are not identical, which may lead to mismatched
collective operations" in the attention's all-to-all. First-Block Cache runs the first transformer block, compares
its output residual with the previous step's, and when the relative L1 distance is under a threshold skips all the
remaining blocks and reuses the cached residual. Under sequence parallelism each rank holds a different slice of the
tokens, so a distance measured on the local slice is a rank-local decision about whether to enter the remaining
blocks -- whose attention all-to-alls need every rank. The issue was closed; xDiT's cache code
(``xfuser/model_executor/cache/utils.py``, ``CachedTransformerBlocks.l1_distance``) reduces the difference and the
norm over the SP group before comparing, so every rank takes the same decision.

What this item does: a four-step denoising loop of a small three-block DiT on two Ulysses ranks: each rank holds four
of the eight video tokens; every block's attention swaps the sequence split for a head split with
``all_to_all_single`` and back. The first block always runs; the remaining two run or are skipped by the cache
check. At the end the latent slices are all-gathered for decoding. Rank 0 holds the tokens of a small moving
object, rank 1 those of a large, high-contrast static background (four times the amplitude), so the relative
change of the first block's residual differs between the two slices.

The bug: the distance is measured on the local slice. At steps 1 and 2 both ranks' distances (0.31/0.18,
0.22/0.14) are over the threshold of 0.058; at the last step rank 1's (0.045) is under it and rank 0's (0.062) is not.
Rank 1 skips the remaining blocks and waits in the final ``all_gather``; rank 0 waits in the second block's
attention all-to-all.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

SEQ, HEADS, HEAD_DIM = 8, 2, 4
HIDDEN = HEADS * HEAD_DIM
NUM_BLOCKS = 3
DTS = (0.5, 0.3, 0.1, 0.02)  # the sampler's step sizes: the latent settles towards the end
THRESH = 0.058
DEBUG = os.environ.get("R51_DEBUG") == "1"


def seq_to_heads(t: torch.Tensor) -> torch.Tensor:
    """(local_seq, 3, HEADS, HEAD_DIM) q/k/v -> (SEQ, 3, HEADS // ws, HEAD_DIM): all tokens, this rank's heads."""
    ws = dist.get_world_size()
    local = t.shape[0]
    send = t.reshape(local, 3, ws, HEADS // ws, HEAD_DIM).permute(2, 0, 1, 3, 4).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)  # WAITS
    return recv.reshape(ws * local, 3, HEADS // ws, HEAD_DIM)


def heads_to_seq(t: torch.Tensor) -> torch.Tensor:
    ws = dist.get_world_size()
    local = t.shape[0] // ws
    send = t.reshape(ws, local, HEADS // ws, HEAD_DIM).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    return recv.transpose(0, 1).reshape(local, HIDDEN)


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(HIDDEN)
        self.qkv = torch.nn.Linear(HIDDEN, 3 * HIDDEN)
        self.out = torch.nn.Linear(HIDDEN, HIDDEN)
        self.norm2 = torch.nn.LayerNorm(HIDDEN)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(HIDDEN, 2 * HIDDEN), torch.nn.GELU(), torch.nn.Linear(2 * HIDDEN, HIDDEN)
        )

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        qkv = seq_to_heads(self.qkv(x).reshape(x.shape[0], 3, HEADS, HEAD_DIM))  # WAITS
        q, k, v = qkv.unbind(1)
        w = torch.softmax(torch.einsum("shd,thd->hst", q, k) / HEAD_DIM**0.5, dim=-1)
        return self.out(heads_to_seq(torch.einsum("hst,thd->shd", w, v)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))  # WAITS
        return x + self.mlp(self.norm2(x))


class FBCachedBlocks(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(NUM_BLOCKS))
        self.prev_first_residual = None
        self.cached_residual = None

    def rel_l1_distance(self, t1: torch.Tensor, t2: torch.Tensor) -> float:
        diff, norm = (t1 - t2).abs().mean(), t2.abs().mean()
        return float(diff / norm)  # BUG

    def forward(self, x: torch.Tensor, step: int) -> torch.Tensor:
        h = self.blocks[0](x)
        first_residual = h - x
        use_cache = False
        if self.prev_first_residual is not None:
            d = self.rel_l1_distance(first_residual, self.prev_first_residual)
            use_cache = d < THRESH
            if DEBUG:
                print(f"rank {dist.get_rank()} step {step}: first-block distance {d:.4f}", flush=True)
        if use_cache:
            return x + self.cached_residual
        self.prev_first_residual = first_residual
        for block in self.blocks[1:]:
            h = block(h)  # WAITS
        self.cached_residual = h - x
        return h


def worker() -> None:
    rank, ws = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(502)
    model = FBCachedBlocks()
    gen = torch.Generator().manual_seed(7)
    latent = torch.randn(SEQ, HIDDEN, generator=gen)
    latent[SEQ // 2 :] *= 4.0  # rank 1's slice: the static background, four times the amplitude
    local = SEQ // ws
    x = latent[rank * local : (rank + 1) * local].clone()
    with torch.no_grad():
        for step, dt in enumerate(DTS):
            x = x - dt * model(x, step)  # WAITS
        slices = [torch.empty_like(x) for _ in range(ws)]
        dist.all_gather(slices, x)  # WAITS
    print(f"rank {rank}: denoised latent norm {torch.cat(slices).norm():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
