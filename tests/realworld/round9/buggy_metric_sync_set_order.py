"""Modelled on meta-pytorch/torchrec PR #4648 ("Make enumerator filtering order deterministic": results built with
``list(set(a) & set(b))`` over strings came out "in a different order in every process", because CPython
randomises the string hash seed per interpreter and spawned ranks are fresh interpreters), on the comment in
torchvision's ``references/detection/utils.py`` ``reduce_dict`` ("sort the keys so that they are consistent
across processes") that the torchvision/detectron2 copies of ``reduce_dict`` carry, and on MP-Gadget/pfft-python
issue #5 ("It is important that all MPI ranks carry the same PYTHONHASHSEED").

What it does: a detection evaluator keeps its state tensors in a dict (a loss sum, a box count, per-class true
and false positives, a confusion matrix, an IoU histogram, all of different sizes) plus a timing entry that is
not synced. ``sync()`` all-reduces every state except the local ones, one ``all_reduce`` per state.

The bug: the names to sync are a set difference, ``set(self.states) - self.local_only``, iterated as is. Under
torchrun every rank is a new interpreter with its own hash seed, so the ranks walk the names in different
orders and pair different tensors in the same all-reduce; the sizes differ, and gloo stops with a size mismatch
(if two states had the same size the values would be mixed silently). Ranks forked from one process share the
seed and agree by accident.

Correct twin: ``correct_metric_sync_sorted_names`` (``sorted(...)``).
"""

import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_CLASSES = 3


class DetectionEvaluator:
    def __init__(self):
        self.states = {
            "loss_sum": torch.zeros(1),
            "num_boxes": torch.zeros(2),
            "true_positives": torch.zeros(NUM_CLASSES),
            "false_positives": torch.zeros(NUM_CLASSES + 1),  # last slot: background
            "confusion": torch.zeros(NUM_CLASSES, NUM_CLASSES),
            "iou_histogram": torch.zeros(10),
            "score_histogram": torch.zeros(5),
            "eval_seconds": torch.zeros(1),
        }
        self.local_only = {"eval_seconds"}

    def update(self, loss, labels, predictions, ious, scores):
        self.states["loss_sum"] += loss
        self.states["num_boxes"] += torch.tensor([len(labels), 1.0])
        for label, pred in zip(labels.tolist(), predictions.tolist()):
            self.states["confusion"][label, pred] += 1
            if label == pred:
                self.states["true_positives"][label] += 1
            else:
                self.states["false_positives"][pred] += 1
        self.states["iou_histogram"] += torch.histc(ious, bins=10, min=0, max=1)
        self.states["score_histogram"] += torch.histc(scores, bins=5, min=0, max=1)

    def sync(self):
        names = set(self.states) - self.local_only  # BUG
        for name in names:
            dist.all_reduce(self.states[name])  # WAITS

    def summary(self):
        tp, fp = self.states["true_positives"], self.states["false_positives"][:NUM_CLASSES]
        precision = tp / (tp + fp).clamp(min=1)
        return {"loss": (self.states["loss_sum"] / self.states["num_boxes"][1]).item(),
                "precision": [round(p, 3) for p in precision.tolist()]}


def evaluate(model, batches):
    evaluator = DetectionEvaluator()
    start = time.perf_counter()
    with torch.no_grad():
        for features, labels in batches:
            logits = model(features)
            loss = torch.nn.functional.cross_entropy(logits, labels)
            probs = logits.softmax(-1)
            evaluator.update(loss, labels, probs.argmax(-1), torch.rand(len(labels)), probs.max(-1).values)
    evaluator.states["eval_seconds"] += time.perf_counter() - start
    evaluator.sync()  # WAITS
    return evaluator.summary()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(6, NUM_CLASSES)
    torch.manual_seed(10 + rank)  # this rank's shard of the validation set
    batches = [(torch.randn(4, 6), torch.randint(0, NUM_CLASSES, (4,))) for _ in range(3)]
    result = evaluate(model, batches)  # WAITS
    if rank == 0:
        print("validation:", result)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
