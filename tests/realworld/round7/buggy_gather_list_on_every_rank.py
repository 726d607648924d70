"""Per-sample evaluation losses collected on rank 0 with ``dist.gather``, the receive list allocated on every
rank.

Models the gather-to-rank-0 step of a distributed evaluation (each rank scores its shard; rank 0 writes the
per-sample results) and the mistake pytorch/pytorch PR #161467 documents ("clarifying docstring for the
gather_list argument for gather()": it must be None on non-destination ranks, as for ``gather_object``),
opened in response to a comment on KellerJordan/Muon issue #46; pytorch/pytorch issue #25463 asks why
non-destination ranks may not pass the list. flowersteam/lamorel issue #19 shows the converse confusion
(``object_gather_list=None`` off the destination looks wrong to readers, but is the rule).

``evaluate`` allocates ``gather_list`` unconditionally, "to be safe". torch validates the argument on each rank
before communicating: rank 1 raises ``ValueError: Argument gather_list must NOT be specified on
non-destination ranks``, and rank 0 waits in the gather for a tensor that never comes.

BUG: ``gather_list`` is a list on every rank instead of ``None`` off ``dst``.
"""

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "buggy"
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
    gather_list = [torch.empty_like(losses) for _ in range(world_size)]  # BUG
    dist.gather(losses, gather_list, dst=0)  # WAITS
    if rank == 0:
        per_sample = torch.cat(gather_list)
        assert per_sample.numel() == count.item()
        print(f"{count.item()} samples, mean loss {per_sample.mean().item():.4f}")


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    evaluate(model, rank, world_size)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    import datetime

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
