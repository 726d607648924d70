"""Distributed evaluation that all-gathers predictions into one fresh tensor per rank.

Modelled on the fix of Lightning-AI/pytorch-lightning issue #3253 (``gather_all_tensors_if_available``:
``[torch.zeros_like(result) for _ in range(world_size)]``), on PrimeIntellect-ai/prime-rl PR #691 and on the
``concat_all_gather`` helpers of MoCo-style code (one ``torch.ones_like`` per rank). The evaluation around it: a
``DistributedSampler`` over a data set that divides evenly by 3 (no padded duplicates), per-rank predictions
and sample indices gathered from every rank, a check that every sample was scored exactly once (as in the
exact-eval test of mosaicml/composer PR #2218), then the accuracy.

Looks suspicious but is right: the gather helper is called twice per evaluation with tensors whose contents
differ per rank (the shapes are the same: 16 samples per rank), under ``torch.no_grad()``, and the check that
raises is reached on every rank with the same gathered data.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20

NUM_SAMPLES = 48


def gather_all_tensors(tensor):
    """Every rank's ``tensor`` (same shape on every rank), in rank order."""
    world_size = dist.get_world_size()
    gathered = [torch.zeros_like(tensor) for _ in range(world_size)]
    dist.all_gather(gathered, tensor.contiguous())
    return gathered


def make_dataset():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(NUM_SAMPLES, 10, generator=g)
    y = (x[:, 0] + 0.3 * x[:, 1] > 0).long()
    return TensorDataset(torch.arange(NUM_SAMPLES), x, y)


@torch.no_grad()
def evaluate(model, loader):
    ids, correct = [], []
    for idx, x, y in loader:
        ids.append(idx)
        correct.append((model(x).argmax(dim=1) == y).long())
    ids, correct = torch.cat(ids), torch.cat(correct)
    all_ids = torch.cat(gather_all_tensors(ids))
    all_correct = torch.cat(gather_all_tensors(correct))
    seen = torch.bincount(all_ids, minlength=NUM_SAMPLES)
    if not torch.equal(seen, torch.ones(NUM_SAMPLES, dtype=seen.dtype)):
        raise RuntimeError(f"evaluation did not score every sample exactly once: counts {seen.tolist()}")
    return all_correct.float().mean().item()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2)).eval()
    dataset = make_dataset()
    sampler = DistributedSampler(dataset, shuffle=False)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    accuracy = evaluate(model, loader)
    if rank == 0:
        print(f"accuracy over {NUM_SAMPLES} samples: {accuracy:.3f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
