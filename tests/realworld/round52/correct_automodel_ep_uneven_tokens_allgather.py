"""NVIDIA-NeMo/Automodel issue #1364 / PR #1365 (2026), as fixed: the expert-parallel token all-gather asks the
ranks for their token counts and pads to the largest.

What the code does: the all-gather token dispatch of an expert-parallel MoE layer, in the shape of Automodel's
``GroupedExperts``. Each rank holds the tokens of its own packed micro-batch (rank 0 packs 6 tokens, rank 1 9), owns
two of the four experts, gathers every rank's tokens, runs its own experts on the tokens routed to them (top-1
router), all-reduces the partial outputs so every token has its expert's output, and keeps the rows of its own
tokens. A loss all-reduce follows each layer call. As in the PR, the gather first all-gathers the token counts,
pads each rank's tokens to the largest count, gathers, and trims each chunk to its real count; the output is
narrowed at the rank's real offset (the sum of the lower ranks' counts) instead of rank times local length.
"""

import datetime
import time

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

HIDDEN = 4
NUM_EXPERTS = 4
PACKED_SEQ_LENS = ((3, 3), (4, 5))  # per rank: the sequences packed into its micro-batch
SECONDS_PER_TOKEN = 0.15  # the collator's packing time


def make_layer():
    gen = torch.Generator().manual_seed(7)  # identical on every rank
    router = torch.randn(HIDDEN, NUM_EXPERTS, generator=gen)
    experts = torch.randn(NUM_EXPERTS, HIDDEN, HIDDEN, generator=gen) * 0.5
    return router, experts


def gather_tokens(x, world):
    count = torch.tensor([x.shape[0]])
    counts = [torch.zeros_like(count) for _ in range(world)]
    dist.all_gather(counts, count)
    counts = [int(c) for c in counts]
    longest = max(counts)
    padded = torch.zeros(longest, x.shape[1], dtype=x.dtype)
    padded[: x.shape[0]] = x
    chunks = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(chunks, padded)
    return torch.cat([chunk[:n] for chunk, n in zip(chunks, counts)]), counts


def moe_forward(x, router, experts, rank, world):
    experts_per_rank = NUM_EXPERTS // world
    local_experts = range(rank * experts_per_rank, (rank + 1) * experts_per_rank)
    all_tokens, counts = gather_tokens(x, world)
    choice = (all_tokens @ router).argmax(dim=1)
    partial = torch.zeros_like(all_tokens)
    for e in local_experts:
        routed = choice == e
        partial[routed] = all_tokens[routed] @ experts[e]
    dist.all_reduce(partial)
    offset = sum(counts[:rank])
    return partial.narrow(0, offset, counts[rank])


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    router, experts = make_layer()
    gen = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(sum(PACKED_SEQ_LENS[rank]), HIDDEN, generator=gen)
    time.sleep(x.shape[0] * SECONDS_PER_TOKEN)  # packing the micro-batch: the longer one is ready later
    y = moe_forward(x, router, experts, rank, world)
    expected = torch.zeros_like(x)
    choice = (x @ router).argmax(dim=1)
    for i, e in enumerate(choice.tolist()):
        expected[i] = x[i] @ experts[e]
    assert torch.allclose(y, expected), "a token did not get its own expert's output"
    loss = torch.tensor([float((y**2).sum()), float(y.shape[0])])
    dist.all_reduce(loss)
    print(f"[rank {rank}] {x.shape[0]} tokens, mean loss {loss[0] / loss[1]:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
