"""Validation meters reused across epochs, reset by every rank at the start of each validation.

Models: pytorch/examples ``imagenet/main.py`` (``AverageMeter`` with ``all_reduce()``, which writes the global
``sum``/``count`` back into the meter on every rank; ``progress.display_summary()``) and the torchvision
classification reference ``references/classification/train.py`` ``evaluate`` (``num_processed_samples`` reduced
across processes and compared with ``len(data_loader.dataset)`` on rank 0; here the comparison raises).

What it does: two ranks train a small DDP classifier for three epochs over a ``DistributedSampler``; after each
epoch every rank validates on its half of a 16-sample validation set, all-reduces the loss and accuracy meters,
and rank 0 alone prints the summary and checks that the global count is 16. The meters are created once, before
the epoch loop, and ``validate`` resets them on every rank before it counts (pytorch/examples makes fresh meters
inside ``validate``, which has the same effect). The rank-0 block only reads. Correct: the count is 16 in every
epoch and both ranks make the same collectives.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


class AverageMeter:
    def __init__(self, name):
        self.name = name
        self.reset()

    def reset(self):
        self.sum = 0.0
        self.count = 0.0
        self.avg = 0.0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def all_reduce(self):
        total = torch.tensor([self.sum, self.count], dtype=torch.float64)
        dist.all_reduce(total)
        self.sum, self.count = total.tolist()
        self.avg = self.sum / self.count


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    return TensorDataset(x, y)


@torch.no_grad()
def validate(model, loader, losses, top1):
    losses.reset()
    top1.reset()
    model.eval()
    for x, y in loader:
        out = model(x)
        losses.update(F.cross_entropy(out, y).item(), x.size(0))
        top1.update((out.argmax(1) == y).float().mean().item() * 100.0, x.size(0))
    losses.all_reduce()
    top1.all_reduce()
    model.train()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train_set, val_set = make_data(64, 1), make_data(16, 2)
    train_sampler = DistributedSampler(train_set, shuffle=True, seed=0)
    train_loader = DataLoader(train_set, batch_size=8, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=4, sampler=DistributedSampler(val_set, shuffle=False))
    losses, top1 = AverageMeter("Loss"), AverageMeter("Acc@1")
    for epoch in range(3):
        train_sampler.set_epoch(epoch)
        for x, y in train_loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        validate(model, val_loader, losses, top1)
        if rank == 0:
            print(f"epoch {epoch}: * {top1.name} {top1.avg:.2f} {losses.name} {losses.avg:.4f}")
            if int(top1.count) != len(val_set):
                raise RuntimeError(
                    f"validation used {int(top1.count)} samples, the dataset has {len(val_set)}")
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
