"""Helpers of the torchvision reference scripts, imported by the round-2 items as a training script imports
its own ``utils`` module (not an item: no ``correct_``/``buggy_`` prefix).

Source: pytorch/vision references/classification/utils.py and references/detection/utils.py
(``is_dist_avail_and_initialized``, ``is_main_process``, ``reduce_across_processes`` — a barrier, then an
all_reduce —, ``SmoothedValue.synchronize_between_processes``, ``MetricLogger``, ``all_gather`` through
``all_gather_object``). Written here for CPU and gloo, not copied.
"""

from collections import defaultdict

import torch
import torch.distributed as dist


def is_dist_avail_and_initialized():
    return dist.is_available() and dist.is_initialized()


def get_rank():
    return dist.get_rank() if is_dist_avail_and_initialized() else 0


def get_world_size():
    return dist.get_world_size() if is_dist_avail_and_initialized() else 1


def is_main_process():
    return get_rank() == 0


def save_on_master(obj, path):
    if is_main_process():
        torch.save(obj, path)


def reduce_across_processes(value):
    tensor = torch.tensor(value, dtype=torch.float64)
    if not is_dist_avail_and_initialized():
        return tensor
    dist.barrier()
    dist.all_reduce(tensor)
    return tensor


def all_gather(data):
    """Every rank's picklable ``data``, in rank order (sizes may differ between ranks)."""
    gathered = [None] * get_world_size()
    dist.all_gather_object(gathered, data)
    return gathered


class SmoothedValue:
    def __init__(self):
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.total += value * n
        self.count += n

    def synchronize_between_processes(self):
        totals = reduce_across_processes([self.count, self.total])
        self.count = int(totals[0].item())
        self.total = totals[1].item()

    @property
    def global_avg(self):
        return self.total / max(self.count, 1)


class MetricLogger:
    def __init__(self):
        self.meters = defaultdict(SmoothedValue)

    def update(self, n=1, **values):
        for name, value in values.items():
            self.meters[name].update(float(value), n)

    def synchronize_between_processes(self):
        for meter in self.meters.values():
            meter.synchronize_between_processes()

    def __str__(self):
        return "  ".join(f"{name}: {meter.global_avg:.4f}" for name, meter in self.meters.items())
