"""A loss log buffer kept in ``defaultdict``s whose keys are reduced one ``all_reduce`` each at the end of an
epoch; the rank-0 console line reads every loss column with ``.get``, which inserts nothing.

Models: open-mmlab mmdetection ``BaseDetector._parse_losses`` (one ``dist.all_reduce`` per log variable; "If the
loss_vars has different length, GPUs will wait infinitely"), mmcv ``runner/log_buffer.py`` (``LogBuffer``
histories averaged for the ``TextLoggerHook``), the text logger hook printing fixed loss columns on the master
only; the auxiliary (deep-supervision) loss switched on after a warm-up.

What it does: 2 ranks train a tiny two-head detector stand-in with DDP for 2 epochs of 4 iterations. The losses are
``loss_cls`` and ``loss_box``, plus ``loss_aux`` from epoch 1 on. Every 2 iterations rank 0 prints the running
means of the three columns (``aux 0.000`` during epoch 0); at each epoch end every rank reduces its buffer (one
``all_reduce`` per key, in sorted key order), rank 0 prints the epoch means and the buffer is cleared.

Why it is right although the buffer is a ``defaultdict``, rank 0 alone reads a key that is missing, and the
number of collectives follows the buffer's keys: ``mean`` reads with ``.get``, so rank 0's console line leaves the
key set alone; every rank reduces ``loss_box``, ``loss_cls`` in epoch 0 and the three keys in epoch 1.
"""

from collections import defaultdict
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

EPOCHS = 2
ITERS = 4
LOG_INTERVAL = 2
AUX_FROM_EPOCH = 1


class LogBuffer:
    def __init__(self):
        self.sums = defaultdict(float)
        self.counts = defaultdict(int)

    def update(self, log_vars):
        for key, value in log_vars.items():
            self.sums[key] += value
            self.counts[key] += 1

    def mean(self, key):
        return self.sums.get(key, 0.0) / max(self.counts.get(key, 0), 1)  # a read that inserts nothing

    def reduce(self):
        for key in sorted(self.sums):
            t = torch.tensor([self.sums[key], float(self.counts[key])], dtype=torch.float64)
            dist.all_reduce(t)
            self.sums[key], self.counts[key] = t[0].item(), int(t[1].item())

    def clear(self):
        self.sums.clear()
        self.counts.clear()


class TinyDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.cls_head = nn.Linear(16, 3)
        self.box_head = nn.Linear(16, 4)
        self.aux_head = nn.Linear(16, 3)

    def forward(self, x, labels, boxes, use_aux):
        h = self.backbone(x)
        losses = {
            "loss_cls": F.cross_entropy(self.cls_head(h), labels),
            "loss_box": F.smooth_l1_loss(self.box_head(h), boxes),
        }
        aux = F.cross_entropy(self.aux_head(h), labels)
        losses["loss_aux"] = aux if use_aux else 0.0 * aux  # the head is in the graph either way
        return losses


def text_logger_line(buf, epoch, it):
    return (f"epoch {epoch} iter {it}: cls {buf.mean('loss_cls'):.3f} box {buf.mean('loss_box'):.3f} "
            f"aux {buf.mean('loss_aux'):.3f}")


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(TinyDetector())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    buf = LogBuffer()
    g = torch.Generator().manual_seed(10 + rank)
    for epoch in range(EPOCHS):
        use_aux = epoch >= AUX_FROM_EPOCH
        for it in range(ITERS):
            x = torch.randn(8, 8, generator=g)
            labels = torch.randint(0, 3, (8,), generator=g)
            boxes = torch.rand(8, 4, generator=g)
            losses = model(x, labels, boxes, use_aux)
            loss = sum(losses.values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            buf.update({k: v.item() for k, v in losses.items() if use_aux or k != "loss_aux"})
            if rank == 0 and (it + 1) % LOG_INTERVAL == 0:
                print(text_logger_line(buf, epoch, it), flush=True)
        buf.reduce()
        if rank == 0:
            print(f"epoch {epoch} means: " + ", ".join(f"{k} {buf.sums[k] / buf.counts[k]:.3f}"
                                                       for k in sorted(buf.sums)), flush=True)
        buf.clear()
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
