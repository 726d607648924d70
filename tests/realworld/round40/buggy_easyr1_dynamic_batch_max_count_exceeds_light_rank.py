"""EasyR1 dynamic batching: the micro-batch count is synchronised with ``all_reduce(MAX)``, and a rank holding fewer
samples than the agreed count fails its partition assertion while its peers wait in the next FSDP collective.

Source: hiyouga/EasyR1 issue #11004 (mixed image/video training with ``dynamic_batching`` deadlocks), PR #11012 ("fix:
prevent dynamic_batching micro-batch deadlock under uneven visual tokens"); modelled on
``verl/utils/seqlen_balancing.py`` ``rearrange_micro_batches`` (``num_micro_batches = min(len(effective_seqlen),
ceildiv(total_seqlen, max_token_len))``, ``dist.all_reduce(..., op=MAX)``, ``assert num_micro_batches <=
len(effective_seqlen)``) and the actor's micro-batch loop, where every forward unshards FSDP parameters.

Rank 0 holds four video samples of 7 tokens each (4 micro-batches under ``max_token_len = 8``), rank 1 two short
image samples (1 micro-batch). The MAX is 4; rank 1 has only 2 samples, so its assertion fails (the PR: "A light rank
with fewer samples than the MAX count crashes; other ranks hang on collectives"), while rank 0 is already in the
first micro-batch's parameter all-gather.

BUG: after the MAX sync the light rank still insists on that many non-empty partitions of its own samples.
"""

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

MAX_TOKEN_LEN = 8
HIDDEN = 4


def ceildiv(a, b):
    return -(a // -b)


def local_batch(rank):
    lengths = [7, 7, 7, 7] if rank == 0 else [2, 3]
    mask = torch.zeros(len(lengths), MAX_TOKEN_LEN)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    g = torch.Generator().manual_seed(rank)
    return {"attention_mask": mask, "hidden": torch.randn(len(lengths), MAX_TOKEN_LEN, HIDDEN, generator=g)}


def balanced_partitions(seqlens, k):
    parts = [[] for _ in range(k)]
    sums = [0] * k
    for i in sorted(range(len(seqlens)), key=lambda j: -seqlens[j]):
        j = min(range(k), key=lambda b: sums[b])
        parts[j].append(i)
        sums[j] += seqlens[i]
    assert all(parts), "a partition is empty"
    return [sorted(p) for p in parts]


def rearrange_micro_batches(batch, max_token_len):
    effective_seqlen = batch["attention_mask"].sum(-1)
    total = int(effective_seqlen.sum().item())
    num_micro_batches = torch.tensor([min(len(effective_seqlen), ceildiv(total, max_token_len))])
    dist.all_reduce(num_micro_batches, op=dist.ReduceOp.MAX)
    num_micro_batches = int(num_micro_batches.item())
    seqlens = [int(x) for x in effective_seqlen.tolist()]
    assert num_micro_batches <= len(seqlens), f"{num_micro_batches} > {len(seqlens)}"  # BUG
    parts = balanced_partitions(seqlens, num_micro_batches)
    return [{k: v[p] for k, v in batch.items()} for p in parts]


def fsdp_forward(shard, micro_batch):
    """FSDP unshard: every rank contributes its flat-parameter shard to an all-gather before the forward."""
    gathered = [torch.empty_like(shard) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, shard)  # WAITS
    weight = torch.cat(gathered).view(HIDDEN, HIDDEN)
    out = micro_batch["hidden"] @ weight
    return (out.pow(2).sum(-1) * micro_batch["attention_mask"]).sum() / micro_batch["attention_mask"].sum().clamp(min=1)


def compute_log_prob(shard, batch):
    micro_batches = rearrange_micro_batches(batch, MAX_TOKEN_LEN)
    return [fsdp_forward(shard, mb).item() for mb in micro_batches]  # WAITS


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    full = torch.randn(HIDDEN * HIDDEN)
    shard = full.chunk(world)[rank].clone()
    values = compute_log_prob(shard, local_batch(rank))  # WAITS
    print(f"[rank {rank}] {len(values)} micro-batches: " + ", ".join(f"{v:.3f}" for v in values), flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
