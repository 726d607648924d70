"""AReno: the DP optimizer's bucket all-gather is skipped by a rank that owns a zero-length shard.

Source: inclusionAI/AReno PR #512 ("fix(cuda): avoid optimizer hangs and non-disk slowdown", 2026-08), fixing a
regression exposed by #498. Modelled on the data-parallel distributed optimizer of its actor/critic training:
each DP rank owns a contiguous shard of every flattened parameter bucket, updates it, and the updated shards are
all-gathered back into the full bucket after ``step()``. The PR's root cause: "The bucket all-gather was
conditional on rank-local updated references. A rank with a zero-length shard could skip the collective while
peers entered it, causing a distributed hang."

Bug: the all-gather runs only ``if updated_refs`` -- the list of parameters this rank's shard touched. Over 3
ranks the 6-element body bucket gives every rank 2 elements, but the 2-element head bucket gives shards of 1 and
rank 2 none, so rank 2 skips that bucket's all-gather and runs ahead into the next step's gradient all-reduce
while ranks 0 and 1 wait in the all-gather.
"""

import datetime
import math

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 15


class DistributedOptimizer:
    """Plain SGD over flattened buckets; each rank owns ``ceil(numel / world)`` elements of every bucket."""

    def __init__(self, buckets, lr=0.1):
        self.buckets = buckets  # list of lists of parameters
        self.lr = lr
        self.rank, self.world = dist.get_rank(), dist.get_world_size()

    def _shard_range(self, numel):
        size = math.ceil(numel / self.world)
        start = min(self.rank * size, numel)
        return start, min(start + size, numel), size

    def step(self):
        for params in self.buckets:
            flat = torch.cat([p.data.reshape(-1) for p in params])
            grad = torch.cat([p.grad.reshape(-1) for p in params])
            start, end, size = self._shard_range(flat.numel())
            updated_refs = []
            offset = 0
            for p in params:  # which parameters this rank's shard touches
                if offset < end and offset + p.numel() > start:
                    updated_refs.append(p)
                offset += p.numel()
            flat[start:end] -= self.lr * grad[start:end]
            if updated_refs:  # BUG
                self._all_gather_bucket(params, flat, start, end, size)  # WAITS

    def _all_gather_bucket(self, params, flat, start, end, size):
        shard = torch.zeros(size)
        shard[: end - start] = flat[start:end]
        gathered = [torch.zeros(size) for _ in range(self.world)]
        dist.all_gather(gathered, shard)  # WAITS
        full = torch.cat(gathered)[: flat.numel()]
        offset = 0
        for p in params:
            p.data.copy_(full[offset: offset + p.numel()].view_as(p))
            offset += p.numel()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    body = torch.nn.Linear(2, 2)  # bucket 0: 4 + 2 = 6 elements -> shards of 2, every rank owns some
    head = torch.nn.Linear(1, 1)  # bucket 1: 1 + 1 = 2 elements -> shards of 1, rank 2 owns none
    optimizer = DistributedOptimizer([list(body.parameters()), list(head.parameters())])
    data = torch.randn(4, 2) + rank
    for step in range(3):
        loss = head(body(data).sum(dim=1, keepdim=True)).pow(2).mean()
        for p in list(body.parameters()) + list(head.parameters()):
            p.grad = None
        loss.backward()
        for p in list(body.parameters()) + list(head.parameters()):
            dist.all_reduce(p.grad)  # gradient sync across DP ranks  # WAITS
            p.grad /= dist.get_world_size()
        optimizer.step()  # WAITS
    checksum = sum(p.sum().item() for p in list(body.parameters()) + list(head.parameters()))
    print(f"rank {rank}: 3 steps, parameter checksum {checksum:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
