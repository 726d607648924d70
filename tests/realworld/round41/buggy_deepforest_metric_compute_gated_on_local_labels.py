"""DeepForest: a rank whose validation shard has only empty images skips the IoU metric's distributed compute.

Source: weecology/DeepForest issue #1407 ("multi-gpu ddp fails if any one rank has all empty validation", 2026-07)
and PR #1426 ("fix: allow empty validation ranks in DDP metrics"). The issue names the cause in
`deepforest/main.py` `_compute_epoch_metrics()`: `if len(self.iou_metric.groundtruth_labels) > 0:` gates
`self.iou_metric.compute()`, but `groundtruth_labels` "reflects only the local rank's accumulated state" (only
non-empty-target images are `update()`-d) while `compute()` is a torchmetrics collective
(`Metric.compute()` -> `gather_all_tensors` -> all_gather). "The watchdog dump showed one rank exactly one
collective op behind the other two".

Modelled: a torchmetrics-style `IoUMetric` whose `compute()` all-gathers the per-rank sizes and then the padded
IoU values (as `gather_all_tensors` does), and a precision/recall metric whose `compute()` all-reduces its
counts. Six validation images, three ranks, `shuffle=False`: images 2 and 5 (rank 2's shard) have no boxes, so
rank 2 skips the IoU compute and enters the precision/recall all-reduce while ranks 0 and 1 are in the IoU
all-gather.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 15

# (predicted box, ground-truth boxes) per validation image; an empty list is an empty frame.
VAL_IMAGES = [
    ([0.0, 0.0, 2.0, 2.0], [[0.0, 0.0, 2.0, 2.0]]),
    ([1.0, 1.0, 3.0, 3.0], [[1.0, 1.0, 4.0, 4.0]]),
    ([0.0, 0.0, 1.0, 1.0], []),
    ([2.0, 2.0, 4.0, 4.0], [[2.0, 2.0, 4.0, 3.0]]),
    ([0.0, 1.0, 2.0, 3.0], [[0.0, 0.0, 2.0, 2.0]]),
    ([1.0, 0.0, 2.0, 1.0], []),
]


def box_iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


class IoUMetric:
    """torchmetrics-style: list state, synced by all-gathering sizes then padded values in compute()."""

    def __init__(self):
        self.groundtruth_labels = []
        self.ious = []

    def update(self, pred, targets):
        for target in targets:
            self.groundtruth_labels.append(0)
            self.ious.append(box_iou(pred, target))

    def compute(self):
        local = torch.tensor(self.ious, dtype=torch.float64)
        size = torch.tensor([local.numel()], dtype=torch.int64)
        sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
        dist.all_gather(sizes, size)  # WAITS
        longest = int(max(s.item() for s in sizes))
        padded = torch.zeros(longest, dtype=torch.float64)
        padded[: local.numel()] = local
        gathered = [torch.zeros_like(padded) for _ in sizes]
        dist.all_gather(gathered, padded)
        values = torch.cat([g[: int(s.item())] for g, s in zip(gathered, sizes)])
        if values.numel() == 0:
            raise ValueError("IntersectionOverUnion: no samples to compute")
        return {"iou": values.mean().item()}


class PrecisionRecallMetric:
    def __init__(self):
        self.counts = torch.zeros(3, dtype=torch.float64)  # tp, fp, fn

    def update(self, pred, targets):
        hits = [t for t in targets if box_iou(pred, t) >= 0.4]
        self.counts += torch.tensor([len(hits[:1]), 1 - len(hits[:1]), len(targets) - len(hits[:1])],
                                    dtype=torch.float64)

    def compute(self):
        counts = self.counts.clone()
        dist.all_reduce(counts)  # WAITS
        tp, fp, fn = counts.tolist()
        return {"box_precision": tp / max(tp + fp, 1.0), "box_recall": tp / max(tp + fn, 1.0)}


class DeepForestModule:
    def __init__(self):
        self.iou_metric = IoUMetric()
        self.precision_recall_metric = PrecisionRecallMetric()

    def validation_step(self, pred, targets):
        if targets:  # only non-empty-target images update the box metrics
            self.iou_metric.update(pred, targets)
        self.precision_recall_metric.update(pred, targets)

    def _compute_epoch_metrics(self):
        metrics = {}
        if len(self.iou_metric.groundtruth_labels) > 0:  # BUG
            metrics.update(self.iou_metric.compute())  # WAITS
        metrics.update(self.precision_recall_metric.compute())  # WAITS
        return metrics


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    module = DeepForestModule()
    for index in range(rank, len(VAL_IMAGES), world_size):  # DistributedSampler, shuffle=False
        pred, targets = VAL_IMAGES[index]
        module.validation_step(pred, targets)
    metrics = module._compute_epoch_metrics()  # WAITS
    print(f"[rank {rank}] {metrics}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
