"""xDiT: First-Block Cache under Ulysses sequence parallelism with the skip decision taken on the whole sequence.

Source: xdit-project/xDiT issue #502 (2025, "Potential Deadlock in FBCache with Sequence Parallelism"): the
first-block residual distance computed on each rank's slice of the tokens differs between ranks, so ranks could
disagree about skipping the remaining blocks and their attention all-to-alls. xDiT's cache code
(``xfuser/model_executor/cache/utils.py``, ``CachedTransformerBlocks.l1_distance``) reduces the difference and the
norm over the SP group before comparing them with the threshold (modelled here, with one SUM all-reduce of the two:
the ratio of sums is the ratio of means), so every rank takes the same decision.

What this item does: a four-step denoising loop of a small three-block DiT on two Ulysses ranks: each rank holds four
of the eight video tokens; every block's attention swaps the sequence split for a head split with
``all_to_all_single`` and back. The first block always runs; the remaining two run or are skipped by the cache
check, now on the group-wide distance (0.24, 0.18, then 0.054 at the last step, under the threshold of 0.058:
both ranks reuse the cached residual there). At the end the latent slices are all-gathered for decoding. Rank 0
holds the tokens of a small moving object, rank 1 those of a large static background (four times the amplitude).
Both ranks make the same collectives; exits 0.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
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
    dist.all_to_all_single(recv, send)
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
        qkv = seq_to_heads(self.qkv(x).reshape(x.shape[0], 3, HEADS, HEAD_DIM))
        q, k, v = qkv.unbind(1)
        w = torch.softmax(torch.einsum("shd,thd->hst", q, k) / HEAD_DIM**0.5, dim=-1)
        return self.out(heads_to_seq(torch.einsum("hst,thd->shd", w, v)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class FBCachedBlocks(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(NUM_BLOCKS))
        self.prev_first_residual = None
        self.cached_residual = None

    def rel_l1_distance(self, t1: torch.Tensor, t2: torch.Tensor) -> float:
        sums = torch.stack([(t1 - t2).abs().mean(), t2.abs().mean()])
        dist.all_reduce(sums)  # the whole sequence's difference and norm
        return float(sums[0] / sums[1])

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
            h = block(h)
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
            x = x - dt * model(x, step)
        slices = [torch.empty_like(x) for _ in range(ws)]
        dist.all_gather(slices, x)
    print(f"rank {rank}: denoised latent norm {torch.cat(slices).norm():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
