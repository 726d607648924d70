"""Per-sample evaluation losses collected on rank 0 with ``dist.gather``, the receive list only on rank 0.

The convention of ``torch.distributed.gather`` / ``gather_object`` (pytorch/pytorch PR #161467: ``gather_list``
must be None on non-destination ranks; flowersteam/lamorel issue #19, where ``object_gather_list=None`` off the
destination is the right call), in a distributed evaluation that scores each rank's shard and writes the
per-sample results on rank 0.

Looks suspicious, is right: the collective gets a rank-dependent argument (``... if rank == 0 else None``), and
the result is used under ``if rank == 0`` only; every rank makes the same calls (all-reduce, gather, barrier).
"""

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

SAMPLES_PER_RANK = 5


def evaluation_shard(rank):
    generator = torch.Generator().manual_seed(1000 + rank)
    return torch.randn(SAMPLES_PER_RANK, 3, generator=generator), torch.randint(0, 2, (SAMPLES_PER_RANK,), generator=generator)


@torch.no_grad()
def evaluate(model, rank, world_size):
    x, y = evaluation_shard(rank)
    losses = nn.functional.cross_entropy(model(x), y, reduction="none")
    count = torch.tensor([losses.numel()])
    dist.all_reduce(count)
    gather_list = [torch.empty_like(losses) for _ in range(world_size)] if rank == 0 else None
    dist.gather(losses, gather_list, dst=0)
    if rank == 0:
        per_sample = torch.cat(gather_list)
        assert per_sample.numel() == count.item()
        print(f"{count.item()} samples, mean loss {per_sample.mean().item():.4f}")


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    evaluate(model, rank, world_size)
    dist.barrier()


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
