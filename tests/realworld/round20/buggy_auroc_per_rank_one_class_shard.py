"""
Validation AUROC computed per rank and then averaged: each rank's meter computes the AUROC of its own
``DistributedSampler`` shard and ``all_reduce``s it -- the way accuracy is averaged with ``reduce_tensor`` in
timm/DeiT-style ``validate``. AUROC is undefined on a shard with one class, and the AUROC helper raises there.

Models: scikit-learn ``_binary_roc_auc_score`` ("Only one class present in y_true. ROC AUC score is not defined in
that case.", a ``ValueError`` until PR #27412 turned it into a warning; issues #4230, #11739, gathierry/FastFlow
issue #16), torchmetrics' ``BinaryAUROC`` (its states are gathered before ``compute``; this meter skips that), and
the averaging of per-rank metrics with ``reduce_tensor``. ``binary_auroc`` is a small stand-in that raises like
scikit-learn did.

Bug: the rare positives are every 4th row of the validation file; ``DistributedSampler(shuffle=False)`` gives rank 0
the even rows (positives and negatives) and rank 1 the odd rows (negatives only). Rank 1 raises ``ValueError`` in
``binary_auroc`` before the average's ``all_reduce``; rank 0 waits in that ``all_reduce`` until rank 1's exit
closes the connection.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


def binary_auroc(labels, scores):
    labels = labels.long()
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("Only one class present in y_true. ROC AUC score is not defined in that case.")
    ranks = torch.empty(len(scores), dtype=torch.float64)
    ranks[scores.argsort()] = torch.arange(1, len(scores) + 1, dtype=torch.float64)
    return ((ranks[labels == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)).item()


class AUCMeter:
    def __init__(self):
        self.scores, self.labels = [], []

    def update(self, scores, labels):
        self.scores.append(scores.detach())
        self.labels.append(labels.detach())

    def compute(self):
        auc = binary_auroc(torch.cat(self.labels), torch.cat(self.scores))  # BUG
        t = torch.tensor([auc], dtype=torch.float64)
        dist.all_reduce(t)  # WAITS
        return t.item() / dist.get_world_size()

    def log(self, epoch, value):
        if dist.get_rank() != 0:
            return
        print(f"epoch {epoch} val AUROC {value:.4f} (mean over ranks)", flush=True)


def make_sets():
    g = torch.Generator().manual_seed(11)
    xt = torch.randn(64, 5, generator=g)
    train = TensorDataset(xt, (xt[:, 0] - xt[:, 1] > 0.8).float())
    xv = torch.randn(32, 5, generator=g)
    yv = torch.zeros(32)
    yv[0::4] = 1.0  # the rare positive class: every 4th row of the validation file
    xv[0::4, 0] += 1.5
    return train, TensorDataset(xv, yv)


@torch.no_grad()
def evaluate(model, loader, epoch):
    model.eval()
    meter = AUCMeter()
    for x, y in loader:
        meter.update(torch.sigmoid(model(x).squeeze(-1)), y)
    auc = meter.compute()  # WAITS
    meter.log(epoch, auc)
    return auc


def worker():
    train_ds, val_ds = make_sets()
    sampler = DistributedSampler(train_ds, seed=0)
    train_loader = DataLoader(train_ds, batch_size=8, sampler=sampler)
    val_loader = DataLoader(val_ds, batch_size=8, sampler=DistributedSampler(val_ds, shuffle=False))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            opt.zero_grad()
            nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(-1), y).backward()
            opt.step()
        evaluate(model, val_loader, epoch)  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
