# Metrics kept in a dict (one per task) and computed on rank 0 only: each compute() all-gathers the metric's
# states, so the other ranks, which never call it, leave rank 0 waiting.
# Models the per-task metric dicts of torchmetrics' MetricCollection docs (Lightning-AI/torchmetrics
# docs/source/pages/overview.rst) and torchmetrics issue #938 (compute on rank 0 only hangs), written here.
# expect: 17 branch metrics["acc"].compute
import torch.distributed as dist
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score


def evaluate(model, loader):
    metrics = {"acc": MulticlassAccuracy(num_classes=3), "f1": MulticlassF1Score(num_classes=3)}
    for x, y in loader:
        preds = model(x).argmax(-1)
        for metric in metrics.values():
            metric.update(preds, y)
    if dist.get_rank() == 0:
        acc = metrics["acc"].compute()
        print(f"accuracy {acc:.3f}")
