"""Exact distributed evaluation (no padded duplicates), each rank's results gathered once after its loop.

Modelled on the distributed evaluators of pfnet/pytorch-pfn-extras PR #551 (a sampler with no sample duplication,
"batch-size won't be guaranteed to be fixed, number of batches for each worker either", results collected from
every worker after the loop), on SeungjunNah/DeepDeblur-PyTorch's ``DistributedEvalSampler`` (README and issue
#44: no synchronising communication inside the loop) and on transformers PR #4243 (distributed evaluation that
gathers all results at the end). The sampler is ``r11_eval_sampler.DistributedEvalSampler`` (helper module).

10 samples on 3 ranks in batches of 3: rank 0 runs two batches, ranks 1 and 2 one. The loop has no collective;
after it, each rank's list of (index, prediction) pairs and its loss sums are gathered with one
``all_gather_object`` (objects of different sizes are fine) and every rank checks that each sample was evaluated
exactly once.

Looks suspicious but is right: an unpadded sampler that gives the ranks different numbers of batches, followed by
a collective; and a helper chain (``evaluate`` → ``finish`` → ``gather_results``) that every rank reaches once.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from r11_eval_sampler import DistributedEvalSampler, batches_per_rank

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20

NUM_SAMPLES = 10
BATCH_SIZE = 3


def make_dataset():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(NUM_SAMPLES, 6, generator=g)
    y = (x[:, 0] > 0).long()
    return TensorDataset(torch.arange(NUM_SAMPLES), x, y)


def gather_results(local):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, local)
    return out


def finish(pairs, loss_sum, count):
    everyone = gather_results({"pairs": pairs, "loss_sum": loss_sum, "count": count})
    merged = sorted(p for part in everyone for p in part["pairs"])
    loss = sum(part["loss_sum"] for part in everyone) / sum(part["count"] for part in everyone)
    return merged, loss


@torch.no_grad()
def evaluate(model, loader):
    pairs, loss_sum, count = [], 0.0, 0
    for idx, x, y in loader:
        logits = model(x)
        loss_sum += nn.functional.cross_entropy(logits, y, reduction="sum").item()
        count += len(y)
        pairs.extend(zip(idx.tolist(), logits.argmax(dim=1).tolist()))
    return finish(pairs, loss_sum, count)


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    dataset = make_dataset()
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, sampler=DistributedEvalSampler(dataset, world, rank))
    merged, loss = evaluate(model, loader)
    ids = [i for i, _ in merged]
    if ids != list(range(NUM_SAMPLES)):
        raise RuntimeError(f"samples evaluated: {ids}")
    if rank == 0:
        print(f"batches per rank {batches_per_rank(NUM_SAMPLES, world, BATCH_SIZE)}; "
              f"evaluated {len(ids)} samples exactly once; mean loss {loss:.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
