"""3DETR under DDP: a mini-batch with no ground-truth boxes on one rank leaves the box head out of that rank's loss.

Models: facebookresearch/3detr issue #22 ("stuck in the 88 epoch": training on SUN RGB-D with two GPUs always stopped
without a message, one GPU was fine; the author: "My best guess is that a mini-batch with no ground truth is being
sampled and since the outputs of this batch are not used to compute any loss, pytorch may hang. Can you print
``targets["num_boxes_replica"]``"; a second user printed it and got 0). Code modelled (written here, not copied):
3DETR's ``main.py`` / ``engine.py`` ``train_one_epoch`` (``model = DistributedDataParallel(model)``, no
``find_unused_parameters``; forward, ``criterion(outputs, batch)``, backward, step) and ``criterion.py``
``SetCriterion`` (``num_boxes_replica`` the sum of the batch's boxes; the box-regression and matched-class terms
computed from the matched queries, so a batch without boxes gives the box head nothing); the detector is a point
encoder with a class head and a box head.

The bug: rank 1's third batch has no boxes, its criterion returns the no-object classification loss alone and the box
head gets no gradient on that rank, so rank 1's DDP reducer never readies the bucket while rank 0's backward
all-reduces it. Rank 0 waits in that backward; rank 1 raises at its next forward ("Expected to have finished reduction
in the prior iteration"). 2 ranks.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_QUERIES = 8
NUM_CLASSES = 3
EMPTY_BATCH = {1: 2}


class PointDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 32))
        self.query_embed = nn.Parameter(torch.randn(NUM_QUERIES, 32) * 0.1)
        self.cls_head = nn.Linear(32, NUM_CLASSES + 1)
        self.box_head = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 6))

    def forward(self, points):
        feats = self.encoder(points).max(dim=1).values
        queries = self.query_embed.unsqueeze(0) + feats.unsqueeze(1)
        return {"sem_cls_logits": self.cls_head(queries), "box_params": self.box_head(queries)}


class SetCriterion:
    def __call__(self, outputs, targets):
        num_boxes_replica = int(targets["num_boxes"].sum())
        logits = outputs["sem_cls_logits"]
        target_cls = torch.full(logits.shape[:2], NUM_CLASSES, dtype=torch.long)
        losses = {}
        if num_boxes_replica == 0:
            losses["loss_sem_cls"] = F.cross_entropy(logits.flatten(0, 1), target_cls.flatten())
            return losses  # BUG
        matched = []
        for b, n in enumerate(targets["num_boxes"].tolist()):
            for q in range(n):
                target_cls[b, q] = targets["gt_cls"][b, q]
                matched.append((b, q))
        losses["loss_sem_cls"] = F.cross_entropy(logits.flatten(0, 1), target_cls.flatten())
        pred = torch.stack([outputs["box_params"][b, q] for b, q in matched])
        gt = torch.stack([targets["gt_boxes"][b, q] for b, q in matched])
        losses["loss_box"] = F.l1_loss(pred, gt, reduction="sum") / num_boxes_replica
        return losses


def make_batch(rank, it, gen):
    points = torch.randn(2, 64, 3, generator=gen)
    if EMPTY_BATCH.get(rank) == it:
        num_boxes = torch.zeros(2, dtype=torch.long)
    else:
        num_boxes = torch.randint(1, 4, (2,), generator=gen)
    return {
        "points": points,
        "num_boxes": num_boxes,
        "gt_cls": torch.randint(0, NUM_CLASSES, (2, NUM_QUERIES), generator=gen),
        "gt_boxes": torch.randn(2, NUM_QUERIES, 6, generator=gen),
    }


def train_one_epoch(model, criterion, optimizer, rank, epoch):
    gen = torch.Generator().manual_seed(1000 * epoch + rank)
    for it in range(5):
        batch = make_batch(rank, it, gen)
        outputs = model(batch["points"])
        losses = criterion(outputs, batch)
        loss = sum(losses.values())
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
    return loss.item()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(PointDetector())
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
    criterion = SetCriterion()
    for epoch in range(2):
        loss = train_one_epoch(model, criterion, optimizer, rank, epoch)  # WAITS
        print(f"[rank {rank}] epoch {epoch}: loss {loss:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
