"""pytorch/examples ImageNet: every rank validates its shard plus the remainder, meters are all-reduced,
and only the rank that saves writes the checkpoint.

Source: pytorch/examples imagenet/main.py: ``validate`` runs ``run_validate`` on the distributed val loader,
then, when ``len(val_loader.sampler) * world_size < len(val_loader.dataset)``, on an ``aux_val_loader`` of the
remaining samples (every rank runs it); ``AverageMeter.all_reduce`` does ``dist.all_reduce`` of
``[sum, count]``; ``save_checkpoint`` is a plain ``torch.save`` under
``if not args.multiprocessing_distributed or args.rank % ngpus_per_node == 0``.
Changed for the lab: a tiny linear model on random data, gloo, one epoch.
Expected: every rank finishes with the same top-1 average.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Subset, TensorDataset
from torch.utils.data.distributed import DistributedSampler

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n

    def all_reduce(self):
        total = torch.tensor([self.sum, self.count], dtype=torch.float32)
        dist.all_reduce(total, dist.ReduceOp.SUM, async_op=False)
        self.sum, self.count = total.tolist()

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


def run_validate(model, loader, top1):
    with torch.no_grad():
        for images, target in loader:
            output = model(images)
            correct = (output.argmax(1) == target).float().mean().item()
            top1.update(correct, images.size(0))


def validate(val_loader, model, world_size):
    top1 = AverageMeter()
    model.eval()
    run_validate(model, val_loader, top1)
    top1.all_reduce()
    if len(val_loader.sampler) * world_size < len(val_loader.dataset):
        aux_val_dataset = Subset(val_loader.dataset,
                                 range(len(val_loader.sampler) * world_size, len(val_loader.dataset)))
        aux_val_loader = DataLoader(aux_val_dataset, batch_size=4)
        run_validate(model, aux_val_loader, top1)
    return top1.avg


def save_checkpoint(state, filename):
    torch.save(state, filename)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train = TensorDataset(torch.randn(32, 16), torch.randint(0, 4, (32,)))
    val = TensorDataset(torch.randn(21, 16), torch.randint(0, 4, (21,)))
    train_loader = DataLoader(train, batch_size=4, sampler=DistributedSampler(train))
    val_loader = DataLoader(val, batch_size=4, sampler=DistributedSampler(val, shuffle=False, drop_last=True))
    model.train()
    for images, target in train_loader:
        loss = nn.functional.cross_entropy(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    acc1 = validate(val_loader, model, world_size)
    if rank % world_size == 0:
        path = os.path.join(tempfile.mkdtemp(), "checkpoint.pth.tar")
        save_checkpoint({"epoch": 1, "state_dict": model.state_dict(), "best_acc1": acc1}, path)
    return acc1


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
