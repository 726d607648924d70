"""Validation AUROC computed the safe way: each rank collects the scores and labels of its ``DistributedSampler``
shard, the meter all-gathers them on every rank (equal sizes: the sampler pads), and the AUROC is computed from
the whole validation set on every rank. The meter's ``log()`` is rank-0-only and raises if it is called before
``sync()`` -- a ``raise`` under a rank test that never fires, because ``sync()`` runs on every rank first.

Models: scikit-learn ``_binary_roc_auc_score`` ("Only one class present in y_true. ROC AUC score is not defined in
that case.", a ``ValueError`` until PR #27412 turned it into a warning; issues #4230, #11739, gathierry/FastFlow
issue #16), torchmetrics' ``BinaryAUROC`` (states are gathered before ``compute``), and the averaging of per-rank
metrics with ``reduce_tensor`` in timm/DeiT-style ``validate``. ``binary_auroc`` is a small stand-in that raises
like scikit-learn did.

Correct: the labels of the whole validation set hold both classes, the one that compute sees on every rank.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "correct"
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
        self.synced = False

    def update(self, scores, labels):
        self.scores.append(scores.detach())
        self.labels.append(labels.detach())

    def sync(self):
        scores, labels = torch.cat(self.scores), torch.cat(self.labels).float()
        world = dist.get_world_size()
        all_scores = [torch.empty_like(scores) for _ in range(world)]
        all_labels = [torch.empty_like(labels) for _ in range(world)]
        dist.all_gather(all_scores, scores)
        dist.all_gather(all_labels, labels)
        self.scores, self.labels = [torch.cat(all_scores)], [torch.cat(all_labels)]
        self.synced = True

    def compute(self):
        return binary_auroc(torch.cat(self.labels), torch.cat(self.scores))

    def log(self, epoch, value):
        if dist.get_rank() != 0:
            return
        if not self.synced:
            raise RuntimeError("AUCMeter.log() before sync(): the value would cover rank 0's shard only")
        print(f"epoch {epoch} val AUROC {value:.4f} over {len(self.labels[0])} rows", flush=True)


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
    meter.sync()
    auc = meter.compute()
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
        evaluate(model, val_loader, epoch)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
