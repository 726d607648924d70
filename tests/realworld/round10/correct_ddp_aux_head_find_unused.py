"""A multi-task model whose auxiliary head runs only on batches that carry auxiliary labels, under DDP with
``find_unused_parameters=True``.

Modelled on the multi-task / partially annotated training loops of detection and segmentation code (an
auxiliary loss added only ``if`` the batch has its annotation), with the setting the mmdetection FAQ
(open-mmlab/mmdetection PR #4742), pytorch/pytorch issue #43259 and the ``DistributedDataParallel`` docstring
give for models whose forward skips parameters: ``find_unused_parameters=True``, which makes DDP traverse the
autograd graph after each forward and mark the parameters outside it ready, so every rank all-reduces every
bucket (a zero gradient for the skipped head).

Correct, though it looks suspicious: a data-dependent branch in a DDP forward, taken differently on the two
ranks (rank 1's second batch has no auxiliary labels), with the backward and its gradient all-reduce right
after it.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

STEPS = 4


class MultiTaskNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU())
        self.cls_head = torch.nn.Linear(16, 3)
        self.aux_head = torch.nn.Linear(16, 1)

    def forward(self, x, with_aux):
        h = self.trunk(x)
        return self.cls_head(h), (self.aux_head(h) if with_aux else None)


def make_batches(rank):
    g = torch.Generator().manual_seed(30 + rank)
    batches = []
    for step in range(STEPS):
        x = torch.randn(8, 6, generator=g)
        y = torch.randint(0, 3, (8,), generator=g)
        # a partially annotated source: rank 1's second batch has no auxiliary (depth) labels
        aux = None if (rank == 1 and step == 1) else torch.randn(8, 1, generator=g)
        batches.append((x, y, aux))
    return batches


def compute_loss(model, x, y, aux):
    logits, aux_pred = model(x, with_aux=aux is not None)
    loss = torch.nn.functional.cross_entropy(logits, y)
    if aux is not None:
        loss = loss + 0.5 * torch.nn.functional.mse_loss(aux_pred, aux)
    return loss


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(MultiTaskNet(), find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for x, y, aux in make_batches(rank):
        opt.zero_grad()
        loss = compute_loss(model, x, y, aux)
        loss.backward()
        opt.step()
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
