"""Lightning DDP: for a batch with no ground truth ``training_step`` returns a zero loss built from the model's
outputs (``logits.sum() * 0.0``), so the backward still reaches every parameter and DDP's gradient all-reduce runs on
every rank.

Models: Lightning-AI/pytorch-lightning issue #12190 / discussion #12189 ("DDP training hangs when one GPU returns zero
loss": returning `torch.tensor([0.0], requires_grad=True, device=self.device)` on one GPU hangs DDP because "this zero
tensor doesnt have any gradient information so the reduction doesn't work"); the fix written from that diagnosis: a
zero that is part of the graph. Code modelled (written here, not copied): Lightning's automatic optimization
(``training_step`` -> ``backward`` -> ``optimizer.step`` under ``DDPStrategy``), ``LightningModule.log(...,
on_epoch=True, sync_dist=True)`` reduced at epoch end (stand-ins: a DDP loop, a tiny detector head scoring anchor boxes
against ground-truth boxes, batches where some images have no boxes).

Rank 1's second batch has no boxes; its zero loss still runs the backward through the heads, the gradients are zero
and every step makes the same gradient all-reduce on both ranks. 2 ranks.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class AnchorDetector(nn.Module):
    def __init__(self, num_anchors=6):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(12, 32), nn.ReLU())
        self.cls_head = nn.Linear(32, num_anchors)
        self.reg_head = nn.Linear(32, num_anchors * 4)

    def forward(self, images):
        h = self.backbone(images)
        return self.cls_head(h), self.reg_head(h).view(len(images), -1, 4)


class LitDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = AnchorDetector()
        self.logged = []

    def training_step(self, ddp_model, batch):
        images, boxes, labels = batch
        logits, deltas = ddp_model(images)
        if labels.numel() == 0:
            return logits.sum() * 0.0 + deltas.sum() * 0.0
        cls_loss = F.binary_cross_entropy_with_logits(logits, labels)
        reg_loss = F.smooth_l1_loss(deltas, boxes)
        return cls_loss + reg_loss


class Trainer:
    def __init__(self, max_epochs):
        self.max_epochs = max_epochs

    def fit(self, lit, batches):
        ddp_model = DDP(lit.model)
        optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
        for epoch in range(self.max_epochs):
            total = torch.zeros(1)
            for batch in batches:
                loss = lit.training_step(ddp_model, batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.detach()
            epoch_loss = total / len(batches)
            dist.all_reduce(epoch_loss)  # sync_dist=True at epoch end
            lit.logged.append(epoch_loss.item() / dist.get_world_size())


def make_batches(rank):
    gen = torch.Generator().manual_seed(30 + rank)
    batches = []
    for i in range(3):
        images = torch.randn(4, 12, generator=gen)
        if rank == 1 and i == 1:
            batches.append((images, torch.zeros(0, 6, 4), torch.zeros(0, 6)))
        else:
            labels = (torch.rand(4, 6, generator=gen) > 0.7).float()
            batches.append((images, torch.randn(4, 6, 4, generator=gen), labels))
    return batches


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    lit = LitDetector()
    Trainer(max_epochs=2).fit(lit, make_batches(rank))
    print(f"[rank {rank}] train_loss per epoch {[round(v, 4) for v in lit.logged]}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
