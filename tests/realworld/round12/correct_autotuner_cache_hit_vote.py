"""A kernel autotuner whose profiling all-reduces the per-tactic timings, with a collective vote on the cache hit.

Source: modelled on NVIDIA/TensorRT-LLM PR #14240 (fix 2, "Collective vote on cache hit in
``AutoTuner.choose_one``": with attention data parallelism and MoE, ranks see different shapes, so the rank-local
cache hit is all-reduced and every rank takes the slow path if any rank misses) and sgl-project/sglang PR #23317
(the per-tactic timings all-reduced across ranks so that every rank picks the same tactic). The tuned op is a fused
MoE layer, tuned on the number of tokens the rank holds rounded up to a power of two; the replicas train under DDP
on gloo.

Correct, though it looks suspicious: each rank looks up its own shape bucket (the buckets differ across ranks, the
table ``TOKENS_PER_STEP`` stands in for each rank's requests) and the profiling all-reduce sits under a condition on
that rank-local lookup; but the condition is the all-reduced vote (MIN of the hit flags), the same on every rank,
and the vote itself is made by every rank on every call. A rank whose bucket is cached profiles again when a peer
misses (its tactic for that bucket may be re-chosen: that costs time, not correctness).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

HIDDEN = 8
EXPERTS = 4
TACTICS = (4, 8, 16)  # tile sizes (tokens per tile) of the grouped GEMM
# Stand-in for the requests each attention-DP rank packs per step: rank -> tokens at steps 0..3.
TOKENS_PER_STEP = {0: (12, 20, 9, 30), 1: (14, 11, 28, 17)}


def shape_bucket(num_tokens):
    return 1 << (num_tokens - 1).bit_length()  # next power of two


def measure(tactic, bucket):
    # stand-in for timing a kernel: a cost model plus per-rank jitter (why the timings are all-reduced)
    tiles = -(-bucket // tactic)
    return tiles * 1.0 + tactic * 0.05 + 0.01 * dist.get_rank()


class AutoTuner:
    def __init__(self):
        self.profiling_cache = {}

    def choose_one(self, op, num_tokens):
        key = (op, shape_bucket(num_tokens))
        hit = torch.tensor([1 if key in self.profiling_cache else 0])
        dist.all_reduce(hit, op=dist.ReduceOp.MIN)  # the vote: a hit only if every rank has one
        if hit.item() == 1:
            return self.profiling_cache[key]
        return self._profile(key)

    def _profile(self, key):
        timings = torch.tensor([measure(t, key[1]) for t in TACTICS])
        dist.all_reduce(timings)  # every rank sees the same timings and picks the same tactic
        best = TACTICS[int(timings.argmin())]
        self.profiling_cache[key] = best
        return best


class FusedMoE(nn.Module):
    def __init__(self, tuner):
        super().__init__()
        self.tuner = tuner
        self.router = nn.Linear(HIDDEN, EXPERTS)
        self.experts = nn.Parameter(torch.randn(EXPERTS, HIDDEN, HIDDEN) * 0.3)

    def forward(self, tokens):
        tile = self.tuner.choose_one("fused_moe", tokens.shape[0])
        gate = torch.softmax(self.router(tokens), dim=-1)
        expert = gate.argmax(dim=-1)
        out = []
        for start in range(0, tokens.shape[0], tile):  # the tactic changes the tiling, not the result
            rows = slice(start, start + tile)
            weights = self.experts[expert[rows]]
            out.append(torch.einsum("th,thk->tk", tokens[rows], weights) * gate[rows].max(dim=-1, keepdim=True).values)
        return tokens + torch.cat(out)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(FusedMoE(AutoTuner()))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    torch.manual_seed(100 + rank)  # each rank's own requests
    for step, num_tokens in enumerate(TOKENS_PER_STEP[rank]):
        tokens = torch.randn(num_tokens, HIDDEN)
        loss = model(tokens).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank} step {step}: {num_tokens} tokens, loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
