"""DEIMv2-style detection training with the ``reduce_dict`` that first agrees on the loss keys across ranks.

Source: Intellindust-AI-Lab/DEIMv2 PR #136 ("Synchronize keys and handle missing values in dist_utils"):
``engine/misc/dist_utils.py`` ``reduce_dict`` all-gathers each rank's key set with ``all_gather_object``,
takes the sorted union, stacks the values with a zero for every key a rank lacks, and all-reduces the stack
— the fix for the hang of Peterande/D-FINE issue #247 (denoising losses absent on a rank whose batch has no
ground-truth boxes). Here: a tiny "detector" whose denoising head only runs when the batch has boxes, DDP
with ``find_unused_parameters=True``, three batches per rank; rank 0's last batch and rank 1's second batch
are all background.

Correct: every rank makes the same two collectives per iteration (an object all-gather of the keys, then an
all-reduce of a stack as long as the union), whatever its data; the logged dicts agree on every rank.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5
FEATURES = 8
BACKGROUND = {(0, 2), (1, 1)}  # (rank, step) of the all-background batches


class TinyDetector(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = torch.nn.Linear(FEATURES, 16)
        self.class_head = torch.nn.Linear(16, 1)
        self.box_head = torch.nn.Linear(16, 4)
        self.dn_head = torch.nn.Linear(16 + 4, 5)

    def forward(self, images, dn_queries=None):
        features = torch.relu(self.backbone(images))
        outputs = {"pred_logits": self.class_head(features).squeeze(-1), "pred_boxes": self.box_head(features).sigmoid()}
        if dn_queries is not None:
            dn = self.dn_head(torch.cat([features, dn_queries], dim=-1))
            outputs["dn_logits"], outputs["dn_boxes"] = dn[:, 0], dn[:, 1:].sigmoid()
        return outputs


def mean_boxes(targets):
    return torch.stack([t["boxes"].mean(dim=0) if len(t["boxes"]) else torch.zeros(4) for t in targets])


def denoising_group(targets, generator):
    if max(len(t["boxes"]) for t in targets) == 0:
        return None
    boxes = mean_boxes(targets)
    return (boxes + 0.05 * torch.randn(boxes.shape, generator=generator)).clamp(0, 1)


def criterion(outputs, targets):
    has_box = torch.tensor([float(len(t["boxes"]) > 0) for t in targets])
    gt_boxes = mean_boxes(targets)
    losses = {
        "loss_vfl": F.binary_cross_entropy_with_logits(outputs["pred_logits"], has_box),
        "loss_bbox": F.l1_loss(outputs["pred_boxes"], gt_boxes),
    }
    if "dn_boxes" in outputs:
        losses["loss_dn_vfl"] = F.binary_cross_entropy_with_logits(outputs["dn_logits"], has_box)
        losses["loss_dn_bbox"] = F.l1_loss(outputs["dn_boxes"], gt_boxes)
    return losses


def reduce_dict(data, avg=True):
    world_size = dist.get_world_size()
    with torch.no_grad():
        key_sets = [None] * world_size
        dist.all_gather_object(key_sets, set(data.keys()))
        keys = sorted(set().union(*key_sets))
        values = torch.stack([data[k] if k in data else torch.tensor(0.0) for k in keys])
        dist.all_reduce(values)
        if avg:
            values /= world_size
        return dict(zip(keys, values))


def make_batches(rank, generator, steps=3):
    batches = []
    for step in range(steps):
        images = torch.randn(2, FEATURES, generator=generator)
        counts = [0, 0] if (rank, step) in BACKGROUND else [2, 1]
        batches.append((images, [{"boxes": torch.rand(n, 4, generator=generator)} for n in counts]))
    return batches


def train_one_epoch(model, optimizer, batches, generator):
    logged = []
    for images, targets in batches:
        loss_dict = criterion(model(images, denoising_group(targets, generator)), targets)
        optimizer.zero_grad()
        sum(loss_dict.values()).backward()
        optimizer.step()
        logged.append({k: round(v.item(), 4) for k, v in reduce_dict(loss_dict).items()})
    return logged


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(TinyDetector(), find_unused_parameters=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(100 + rank)
    logged = train_one_epoch(model, optimizer, make_batches(rank, generator), generator)
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, logged)
    assert all(entry == logged for entry in everyone), everyone
    assert all(len(entry) == 4 for entry in logged), logged
    return logged


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
