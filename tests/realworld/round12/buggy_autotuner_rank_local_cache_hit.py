"""A kernel autotuner whose profiling all-reduces the per-tactic timings, skipped on a rank-local cache hit.

Source: modelled on NVIDIA/TensorRT-LLM PR #14240 (``AutoTuner.choose_one``: "with ADP + MoE EP, different ranks see
different per-expert routing shapes -> ``is_cache_hit`` (``profiling_cache.search_cache``) diverges across ranks";
the slow path ends in collectives; fix: a collective vote on the cache hit) and sgl-project/sglang PR #23317
(FlashInfer's ``AutoTuner.choose_one`` runs on every TP rank; the per-tactic timings are all-reduced so that every
rank's ``argmin`` picks the same tactic). The tuned op is a fused MoE layer, tuned on the number of tokens the rank
holds rounded up to a power of two (the tuner's shape bucket); the replicas train under DDP on gloo.

Each rank holds a different number of tokens per step (attention data parallelism: every rank packs its own
requests; the table ``TOKENS_PER_STEP`` stands in for that traffic). The bug: ``choose_one`` returns the cached
tactic when the rank's *own* bucket is in its cache. At step 1 rank 0's bucket (32) is new and it profiles, i.e.
all-reduces its timings, while rank 1's bucket (16) was tuned at step 0: rank 1 runs the layer and goes into
DDP's gradient all-reduce in ``backward()``. The two all-reduces pair up with different sizes.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
        if key in self.profiling_cache:  # BUG
            return self.profiling_cache[key]
        return self._profile(key)  # WAITS

    def _profile(self, key):
        timings = torch.tensor([measure(t, key[1]) for t in TACTICS])
        dist.all_reduce(timings)  # every rank sees the same timings and picks the same tactic  # WAITS
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
        tile = self.tuner.choose_one("fused_moe", tokens.shape[0])  # WAITS
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
        loss = model(tokens).pow(2).mean()  # WAITS
        loss.backward()  # WAITS
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank} step {step}: {num_tokens} tokens, loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
