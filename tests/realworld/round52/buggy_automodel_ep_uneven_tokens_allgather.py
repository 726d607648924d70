"""NVIDIA-NeMo/Automodel issue #1364 / PR #1365 (2026): expert-parallel MoE training deadlocks on the first
forward when sequence packing gives the ranks different token counts.

What the code does: the all-gather token dispatch of an expert-parallel MoE layer, in the shape of Automodel's
``GroupedExperts``. Each rank holds the tokens of its own packed micro-batch (rank 0 packs 6 tokens, rank 1 9), owns
two of the four experts, gathers every rank's tokens, runs its own experts on the tokens routed to them (top-1
router), all-reduces the partial outputs so every token has its expert's output, and keeps the rows of its own
tokens. A loss all-reduce follows each layer call.

The bug: the gather is built the way ``DTensor.from_local(x, [Shard(0)]).full_tensor()`` builds it -- the global
length is taken as this rank's length times the world size, computed on each rank without asking the others -- so
each rank's receive buffers have its own row count. On gloo rank 0 (6 rows per peer) receives rank 1's 9 rows and
aborts (``Received data size doesn't match expected size``) as soon as rank 1, whose longer micro-batch is packed
later, joins the all-gather; rank 1 is still waiting in that all-gather for rank 0's rows when rank 0's connection
goes. (Without the packing delay rank 1 was found either there or, having taken rank 0's 6 rows into its 9-row
buffer, in the output all-reduce.) Under NCCL (the issue) every rank waited in
the coalesced all-gather until the watchdog fired. The PR's fix (the correct twin): all-gather the token counts,
pad every rank's tokens to the largest, gather, trim each chunk to its real count, and narrow the reduced output at
the rank's real offset.
"""

import datetime
import time

import torch
import torch.distributed as dist

KIND = "buggy"
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
    chunks = [torch.empty_like(x) for _ in range(world)]  # BUG
    dist.all_gather(chunks, x)  # WAITS
    return torch.cat(chunks), [x.shape[0]] * world


def moe_forward(x, router, experts, rank, world):
    experts_per_rank = NUM_EXPERTS // world
    local_experts = range(rank * experts_per_rank, (rank + 1) * experts_per_rank)
    all_tokens, counts = gather_tokens(x, world)  # WAITS
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
    y = moe_forward(x, router, experts, rank, world)  # WAITS
    loss = torch.tensor([float((y**2).sum()), float(y.shape[0])])
    dist.all_reduce(loss)
    print(f"[rank {rank}] {x.shape[0]} tokens, mean loss {loss[0] / loss[1]:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
