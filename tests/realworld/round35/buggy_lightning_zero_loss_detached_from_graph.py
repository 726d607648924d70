"""Lightning DDP: ``training_step`` returns a fresh ``torch.tensor(0.0, requires_grad=True)`` for a batch with no
ground truth, so that rank's backward never reaches the model and DDP's gradient all-reduce is skipped on it.

Models: Lightning-AI/pytorch-lightning issue #12190 / discussion #12189 ("DDP training hangs when one GPU returns zero
loss": "sometimes a batch might contain no ground truth, and so train_step needs to return a zero loss. In the
single-gpu case I can just return `torch.tensor([0.0], requires_grad=True, device=self.device)` and it works. However
in the DDP case, if one GPU gets a batch like this, it causes the entire training process to hang ... this zero tensor
doesnt have any gradient information so the reduction doesn't work"). Code modelled (written here, not copied):
Lightning's automatic optimization (``training_step`` -> ``backward`` -> ``optimizer.step`` under ``DDPStrategy``),
``LightningModule.log(..., on_epoch=True, sync_dist=True)`` reduced at epoch end (stand-ins: a DDP loop, a tiny
detector head scoring anchor boxes against ground-truth boxes, batches where some images have no boxes).

The bug: on rank 1 the second batch has no boxes; its loss is a new leaf, the backward touches no parameter and DDP
makes no gradient all-reduce there. Rank 0's second gradient all-reduce pairs with rank 1's third, and at the end of
epoch 0 rank 1's epoch-loss all-reduce (``sync_dist``) meets rank 0's third gradient all-reduce. 2 ranks.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
            return torch.tensor(0.0, requires_grad=True)  # BUG
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
                loss.backward()  # WAITS
                optimizer.step()
                total += loss.detach()
            epoch_loss = total / len(batches)
            dist.all_reduce(epoch_loss)  # WAITS
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
    Trainer(max_epochs=2).fit(lit, make_batches(rank))  # WAITS
    print(f"[rank {rank}] train_loss per epoch {[round(v, 4) for v in lit.logged]}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
