"""torchvision-reference-style ``MetricLogger`` / ``SmoothedValue``: the meters are local, ``log_every`` prints
on rank 0 only (``if is_main_process(): print(f"... {self}")``) every few steps, and at the end of the epoch
``synchronize_between_processes()`` runs on EVERY rank (one all-reduce of count and total per meter) before rank 0 prints the averaged stats.

Models: pytorch/vision ``references/classification/utils.py`` (``SmoothedValue.synchronize_between_processes``:
"Warning: does not synchronize the deque!", ``global_avg``, ``__str__`` via ``self.fmt.format(...)``;
``MetricLogger.__str__``, ``log_every``, ``synchronize_between_processes``) and ``train.py`` /
``engine.py`` (``metric_logger.synchronize_between_processes()`` then ``print(f"Averaged stats: ...")``); the same
classes in facebookresearch/detr ``util/misc.py`` and DeiT ``utils.py``.

Correct: ``str(meter)`` only reads local numbers, so printing on rank 0 alone is harmless; the one collective per
meter is called on every rank.
"""
import datetime
from collections import defaultdict, deque

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


def is_main_process():
    return dist.get_rank() == 0


class SmoothedValue:
    def __init__(self, window_size=20, fmt=None):
        self.deque = deque(maxlen=window_size)
        self.total = 0.0
        self.count = 0
        self.fmt = fmt or "{median:.4f} ({global_avg:.4f})"

    def update(self, value, n=1):
        self.deque.append(value)
        self.count += n
        self.total += value * n

    def synchronize_between_processes(self):
        t = torch.tensor([self.count, self.total], dtype=torch.float64)
        dist.barrier()
        dist.all_reduce(t)
        self.count = int(t[0].item())
        self.total = t[1].item()

    @property
    def median(self):
        return torch.tensor(list(self.deque)).median().item()

    @property
    def avg(self):
        return torch.tensor(list(self.deque), dtype=torch.float32).mean().item()

    @property
    def global_avg(self):
        return self.total / self.count

    @property
    def max(self):
        return max(self.deque)

    @property
    def value(self):
        return self.deque[-1]

    def __str__(self):
        return self.fmt.format(median=self.median, avg=self.avg, global_avg=self.global_avg, max=self.max, value=self.value)


class MetricLogger:
    def __init__(self, delimiter="  "):
        self.meters = defaultdict(SmoothedValue)
        self.delimiter = delimiter

    def update(self, **kwargs):
        for k, v in kwargs.items():
            self.meters[k].update(v.item() if isinstance(v, torch.Tensor) else v)

    def __str__(self):
        parts = []
        for name, meter in self.meters.items():
            parts.append(f"{name}: {meter}")
        return self.delimiter.join(parts)

    def synchronize_between_processes(self):
        for meter in self.meters.values():
            meter.synchronize_between_processes()

    def log_every(self, iterable, print_freq, header=""):
        for i, obj in enumerate(iterable):
            yield obj
            if (i % print_freq == 0 or i == len(iterable) - 1) and is_main_process():
                print(f"{header} [{i}/{len(iterable)}]  {self}", flush=True)


def train_one_epoch(model, loader, opt, epoch):
    model.train()
    metric_logger = MetricLogger()
    for x, y in metric_logger.log_every(loader, 2, header=f"Epoch: [{epoch}]"):
        opt.zero_grad()
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        acc1 = (out.argmax(-1) == y).float().mean() * 100
        metric_logger.update(loss=loss, acc1=acc1)
    metric_logger.synchronize_between_processes()
    if is_main_process():
        print(f"Averaged stats: {metric_logger}", flush=True)


def worker():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(48, 10, generator=g)
    ds = TensorDataset(x, (x[:, :3].sum(-1) > 0).long())
    sampler = DistributedSampler(ds, seed=0)
    loader = DataLoader(ds, batch_size=6, sampler=sampler)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        train_one_epoch(model, loader, opt, epoch)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
