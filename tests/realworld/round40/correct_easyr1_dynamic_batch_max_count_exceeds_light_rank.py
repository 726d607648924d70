"""EasyR1 dynamic batching with the agreed micro-batch count padded by dummy micro-batches on light ranks.

Source: hiyouga/EasyR1 issue #11004, PR #11012 ("fix: prevent dynamic_batching micro-batch deadlock under uneven
visual tokens"): "partition at most ``local_bsz`` real groups", then "Pad remaining steps with **dummy** 1-row
micro-batches (zero ``attention_mask`` / ``response_mask``, empty index lists) so every rank runs the same number of
forward/backward collective steps". Modelled on ``verl/utils/seqlen_balancing.py`` ``rearrange_micro_batches``.

Rank 0 has four 7-token samples (4 micro-batches), rank 1 two short ones; the MAX is 4, rank 1 forms 2 real
micro-batches and 2 dummies (sample 0 with a zero mask), and both ranks run 4 FSDP forwards.
"""

import torch
import torch.distributed as dist

KIND = "correct"
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
    real = min(num_micro_batches, len(seqlens))
    micro_batches = [{k: v[p] for k, v in batch.items()} for p in balanced_partitions(seqlens, real)]
    for _ in range(num_micro_batches - real):
        dummy = {k: v[:1].clone() for k, v in batch.items()}
        dummy["attention_mask"].zero_()
        micro_batches.append(dummy)
    return micro_batches


def fsdp_forward(shard, micro_batch):
    gathered = [torch.empty_like(shard) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, shard)
    weight = torch.cat(gathered).view(HIDDEN, HIDDEN)
    out = micro_batch["hidden"] @ weight
    return (out.pow(2).sum(-1) * micro_batch["attention_mask"]).sum() / micro_batch["attention_mask"].sum().clamp(min=1)


def compute_log_prob(shard, batch):
    micro_batches = rearrange_micro_batches(batch, MAX_TOKEN_LEN)
    return [fsdp_forward(shard, mb).item() for mb in micro_batches]


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    full = torch.randn(HIDDEN * HIDDEN)
    shard = full.chunk(world)[rank].clone()
    values = compute_log_prob(shard, local_batch(rank))
    print(f"[rank {rank}] {len(values)} micro-batches: " + ", ".join(f"{v:.3f}" for v in values), flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
