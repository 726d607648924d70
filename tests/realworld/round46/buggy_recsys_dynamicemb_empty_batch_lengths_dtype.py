"""NVIDIA recsys-examples (dynamicemb): a rank fed an empty batch sends its KJT lengths in another dtype.

Source: NVIDIA/recsys-examples issue #341 (2026-04; its reproducer feeds rank 0 four id lists and every other rank
four empty lists, then `self.ec(kjt)` hangs), PR #342 (the reporter's empty-input branch) and PR #349 ("Fix empty
batch hang fundamentally": "the hang issue is because the data type mismatched due to different code path" --
"provide the same data type of `dedup_features.lengths`"); `corelib/dynamicemb/dynamicemb/shard/embedding.py`
`ShardedDynamicEmbeddingCollection._dedup_indices` and `input_dist`.

Before the input distribution each rank de-duplicates its ids: the dedup kernels return the unique keys and new
per-bucket `lengths` (int64 here), while a rank whose batch has no ids takes the early branch and hands on the
input KJT's own `lengths` (int32, torchrec's usual dtype). The KJT all-to-all then exchanges the per-destination
lengths: rank 0 sends int64 buckets, rank 1 int32 buckets of the same count, so the byte counts differ (an NCCL hang
in the issue; gloo's size check aborts a rank). The fix (PR #349): the empty branch builds `lengths` in the same
dtype as the dedup path.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB, DIM, BATCH = 64, 4, 4


@dataclass
class KJT:
    """A one-feature KeyedJaggedTensor: `lengths[b]` ids of sample b, concatenated in `values`."""
    values: torch.Tensor
    lengths: torch.Tensor

    @staticmethod
    def from_lists(lists):
        values = torch.tensor([v for lst in lists for v in lst], dtype=torch.int64)
        return KJT(values, torch.tensor([len(lst) for lst in lists], dtype=torch.int32))


class ShardedDynamicEmbedding:
    """Row-wise sharded table: id i lives on rank i % world."""

    def __init__(self):
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        torch.manual_seed(0)
        full = torch.randn(VOCAB, DIM)
        self.rows = {i: full[i] for i in range(self.rank, VOCAB, self.world)}

    def _dedup_indices(self, features: KJT):
        indices = features.values
        if indices.numel() == 0:  # handle empty input
            return KJT(indices, features.lengths), torch.empty(0, dtype=torch.int64)  # BUG
        unique, reverse = torch.unique(indices, return_inverse=True)
        lengths = torch.zeros(features.lengths.numel(), dtype=torch.int64)
        lengths[0] = unique.numel()  # the dedup kernel counts a table's unique keys in its first bucket
        return KJT(unique, lengths), reverse

    def input_dist(self, dedup: KJT):
        """KJTAllToAll: per-destination lengths first, then the ids themselves."""
        owner = dedup.values % self.world
        send_lengths = torch.stack([torch.zeros_like(dedup.lengths) for _ in range(self.world)])
        for dst in range(self.world):
            send_lengths[dst][0] = int((owner == dst).sum())
        recv_lengths = torch.zeros_like(send_lengths)
        dist.all_to_all_single(recv_lengths, send_lengths)  # WAITS
        send_splits = [int(n) for n in send_lengths.sum(dim=1)]
        recv_splits = [int(n) for n in recv_lengths.sum(dim=1)]
        order = torch.argsort(owner, stable=True)
        recv_ids = torch.empty(sum(recv_splits), dtype=torch.int64)
        dist.all_to_all_single(recv_ids, dedup.values[order], recv_splits, send_splits)  # WAITS
        return order, send_splits, recv_ids, recv_splits

    def forward(self, features: KJT) -> torch.Tensor:
        dedup, reverse = self._dedup_indices(features)
        order, send_splits, recv_ids, recv_splits = self.input_dist(dedup)  # WAITS
        looked_up = torch.stack([self.rows[int(i)] for i in recv_ids]) if len(recv_ids) else torch.empty(0, DIM)
        back = torch.empty(sum(send_splits), DIM)
        dist.all_to_all_single(back, looked_up, send_splits, recv_splits)
        unique_emb = torch.empty_like(back)
        unique_emb[order] = back
        per_id = unique_emb[reverse] if reverse.numel() else torch.empty(0, DIM)
        out = torch.zeros(BATCH, DIM)  # sum-pooled per sample
        sample = torch.repeat_interleave(torch.arange(BATCH), features.lengths.long())
        return out.index_add_(0, sample, per_id)


def worker():
    rank = dist.get_rank()
    ec = ShardedDynamicEmbedding()
    if rank == 0:
        batch = [[1, 2, 3], [4, 5], [6], [7, 8, 9, 10]]
    else:
        batch = [[], [], [], []]  # this rank's reader ran dry: an empty batch (the reproducer)
    pooled = ec.forward(KJT.from_lists(batch))  # WAITS
    print(f"rank {rank}: pooled embeddings {tuple(pooled.shape)}, sum {pooled.sum().item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
