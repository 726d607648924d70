"""Distributed evaluation whose all-gather writes every rank's slot into one tensor.

Modelled on the Lightning metrics helper ``gather_all_tensors_if_available`` of
Lightning-AI/pytorch-lightning issue #3253 (``gathered_result = world_size * [torch.zeros_like(result)]``: "tensors
in all GPUs are the wrongly same as one GPU, since they share the same storage"), on
PrimeIntellect-ai/prime-rl PR #691 ("Fix all gather shared obj reference": ``[tensor] * world_size``) and on
pytorch/pytorch issue #14632 (c10d does not check that the output tensors of ``all_gather`` have distinct
storage). The evaluation around it follows the usual exact-evaluation recipe: a ``DistributedSampler`` over a data
set that divides evenly, predictions and sample indices gathered from every rank, then a check that every
sample was scored exactly once (the check of mosaicml/composer PR #2218's exact-eval test) before the accuracy
is reported.

Bug: ``[torch.zeros_like(tensor)] * world_size`` is one tensor listed three times. gloo writes rank 0's, rank 1's
and rank 2's data into it one after another, so every "gathered" slot holds the last rank's block. No collective
is mismatched and nothing hangs: the sample indices come back as three copies of rank 2's, the coverage check
raises on every rank, and without it the script would report rank 2's accuracy as the data set's.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 20

NUM_SAMPLES = 48


def gather_all_tensors(tensor):
    """Every rank's ``tensor`` (same shape on every rank), in rank order."""
    world_size = dist.get_world_size()
    gathered = [torch.zeros_like(tensor)] * world_size  # BUG
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
