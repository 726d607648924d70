"""
torchvision-reference-style ``MetricLogger`` / ``SmoothedValue`` where the learner made ``global_avg`` "really
global" by all-reducing count and total inside the property (and dropped the end-of-epoch
``synchronize_between_processes``). The property is read by ``SmoothedValue.__str__``, which
``MetricLogger.__str__`` calls through an f-string, which ``log_every`` builds under ``if ... and is_main_process():``:
a collective three dunder/property hops below a rank test.

Models: pytorch/vision ``references/classification/utils.py`` (``SmoothedValue.global_avg``, ``__str__`` via
``self.fmt.format(...)``, ``MetricLogger.__str__``, ``log_every``, ``synchronize_between_processes``) and the same
classes in facebookresearch/detr ``util/misc.py`` and DeiT ``utils.py``; in torchvision the f-string is built on
every rank (``print`` is silenced off the main process by ``setup_for_distributed``), here it is built under
``is_main_process()``, as many copies do.

Bug: at step 0 rank 0 formats the logger and enters ``global_avg``'s ``all_reduce``; rank 1 does not log and goes on
to step 1, whose DDP forward (the bucket rebuild after the first iteration) or backward is its next collective.
The collectives do not match: under torchrun rank 1 waited in ``model(x)`` of step 1 until the 20 s timeout, and
rank 0 lost its peer in the ``all_reduce``.
"""
import datetime
from collections import defaultdict, deque

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
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

    @property
    def median(self):
        return torch.tensor(list(self.deque)).median().item()

    @property
    def avg(self):
        return torch.tensor(list(self.deque), dtype=torch.float32).mean().item()

    @property
    def global_avg(self):
        t = torch.tensor([self.count, self.total], dtype=torch.float64)
        dist.all_reduce(t)  # BUG WAITS
        return t[1].item() / t[0].item()

    @property
    def max(self):
        return max(self.deque)

    @property
    def value(self):
        return self.deque[-1]

    def __str__(self):
        return self.fmt.format(median=self.median, avg=self.avg, global_avg=self.global_avg, max=self.max, value=self.value)  # WAITS


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
            parts.append(f"{name}: {meter}")  # WAITS
        return self.delimiter.join(parts)

    def log_every(self, iterable, print_freq, header=""):
        for i, obj in enumerate(iterable):
            yield obj
            if (i % print_freq == 0 or i == len(iterable) - 1) and is_main_process():
                print(f"{header} [{i}/{len(iterable)}]  {self}", flush=True)  # WAITS


def train_one_epoch(model, loader, opt, epoch):
    model.train()
    metric_logger = MetricLogger()
    for x, y in metric_logger.log_every(loader, 2, header=f"Epoch: [{epoch}]"):  # WAITS
        opt.zero_grad()
        out = model(x)  # WAITS
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()  # WAITS
        opt.step()
        acc1 = (out.argmax(-1) == y).float().mean() * 100
        metric_logger.update(loss=loss, acc1=acc1)
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
        train_one_epoch(model, loader, opt, epoch)  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
