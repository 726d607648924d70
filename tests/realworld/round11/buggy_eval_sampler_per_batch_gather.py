"""Exact distributed evaluation (no padded duplicates) with an all-gather after every batch.

Modelled on SeungjunNah/DeepDeblur-PyTorch issue #44 ("DistributedEvalSamper hangs at the end of the script when
using DDP": 10 samples on 3 GPUs, two processes hang, one finishes; the author asks whether "any kind of
communication between processes that requires synchronization" runs in the loop), on pytorch/pytorch issue
#22584 (why ``DistributedSampler`` pads: "otherwise a rank will have less samples and thus possibly less
iterations, and the other ranks running all reduce will hang"), on the review of Lightning-AI/torchmetrics PR #1886
("not all ranks would reach the same distributed function calls") and on Chris-hughes10/pytorch-accelerated PR
#53 (a gather after a last batch that differs in size between processes freezes the run). The sampler is
``r11_eval_sampler.DistributedEvalSampler`` (helper module); the metric code gathers predictions batch by batch,
three calls deep: ``evaluate`` → ``collect_batch`` → ``gather_rows``.

Bug: per-batch ``all_gather`` with an unpadded sampler. 10 samples on 3 ranks in batches of 3: rank 0 has 4
samples (batches of 3 and 1), ranks 1 and 2 have 3 (one batch). Rank 0 is alone in the all-gather of its second
batch; ranks 1 and 2 have left the loop and wait in the all-reduce of the loss sum that follows it.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from r11_eval_sampler import DistributedEvalSampler

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 20

NUM_SAMPLES = 10
BATCH_SIZE = 3


def make_dataset():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(NUM_SAMPLES, 6, generator=g)
    y = (x[:, 0] > 0).long()
    return TensorDataset(torch.arange(NUM_SAMPLES), x, y)


def gather_rows(tensor):
    out = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor)  # WAITS
    return torch.cat(out)


def collect_batch(store, ids, preds):
    store["ids"].append(gather_rows(ids))  # WAITS
    store["preds"].append(gather_rows(preds))


@torch.no_grad()
def evaluate(model, loader):
    store = {"ids": [], "preds": []}
    loss_sum = torch.zeros(2)
    for idx, x, y in loader:
        logits = model(x)
        loss_sum += torch.stack([nn.functional.cross_entropy(logits, y, reduction="sum"), torch.tensor(len(y))])
        collect_batch(store, idx, logits.argmax(dim=1))  # BUG # WAITS
    dist.all_reduce(loss_sum)  # WAITS
    ids, preds = torch.cat(store["ids"]), torch.cat(store["preds"])
    return ids, preds, (loss_sum[0] / loss_sum[1]).item()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    dataset = make_dataset()
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, sampler=DistributedEvalSampler(dataset, world, rank))
    ids, preds, loss = evaluate(model, loader)  # WAITS
    if sorted(ids.tolist()) != list(range(NUM_SAMPLES)):
        raise RuntimeError(f"samples evaluated: {sorted(ids.tolist())}")
    if rank == 0:
        print(f"evaluated {len(ids)} samples exactly once; mean loss {loss:.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
