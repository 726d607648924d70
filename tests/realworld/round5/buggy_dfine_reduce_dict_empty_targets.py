"""D-FINE-style detection training: a rank whose batch has no ground-truth boxes leaves out the denoising
losses, and ``reduce_dict`` all-reduces the stacked loss values for logging.

Source: Peterande/D-FINE issue #247 ("Deadlock in reduce_dict when targets are empty on some ranks"):
``get_contrastive_denoising_training_group()`` returns ``None`` when ``max_gt_num == 0``, the criterion then
produces no denoising losses, and ``reduce_dict`` (src/misc/dist_utils.py, after DETR's util/misc.py: the
values of ``sorted(keys)`` stacked and all-reduced in one call) gets a shorter stack on that rank. The same
report: Intellindust-AI-Lab/DEIMv2 issue #154 and PR #136, lyuwenyu/RT-DETR PR #684, and
open-mmlab/mmdetection issue #2193 (cascade R-CNN's box losses missing on all-background batches). Here: a tiny
"detector" (a linear backbone, a class and a box head, a denoising head fed with the ground-truth boxes)
wrapped in DDP with ``find_unused_parameters=True``, as D-FINE's configurations do; two batches of two images
per rank; both images of rank 1's second batch are background.

The bug: the set of loss keys depends on the data, and ``reduce_dict`` trusts every rank to have the same
keys: in the second iteration rank 1 all-reduces 2 values while rank 0 all-reduces 4.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 5
FEATURES = 8


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


def denoising_group(targets, generator):
    """Noised ground-truth boxes, one query per image; ``None`` when no image of the batch has a box."""
    if max(len(t["boxes"]) for t in targets) == 0:
        return None
    boxes = torch.stack([t["boxes"].mean(dim=0) if len(t["boxes"]) else torch.zeros(4) for t in targets])
    return (boxes + 0.05 * torch.randn(boxes.shape, generator=generator)).clamp(0, 1)


def criterion(outputs, targets):
    has_box = torch.tensor([float(len(t["boxes"]) > 0) for t in targets])
    gt_boxes = torch.stack([t["boxes"].mean(dim=0) if len(t["boxes"]) else torch.zeros(4) for t in targets])
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
        keys = sorted(data.keys())  # BUG
        values = torch.stack([data[k] for k in keys])
        dist.all_reduce(values)  # WAITS
        if avg:
            values /= world_size
        return dict(zip(keys, values))


def make_batches(rank, generator):
    """Two batches of two images; an image has 0-2 boxes. Rank 1's second batch is all background."""
    batches = []
    for step in range(2):
        images = torch.randn(2, FEATURES, generator=generator)
        counts = [0, 0] if (rank, step) == (1, 1) else [1, 2]
        targets = [{"boxes": torch.rand(n, 4, generator=generator)} for n in counts]
        batches.append((images, targets))
    return batches


def train_one_epoch(model, optimizer, batches, generator):
    logged = []
    for images, targets in batches:
        outputs = model(images, denoising_group(targets, generator))
        loss_dict = criterion(outputs, targets)
        loss = sum(loss_dict.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_dict_reduced = reduce_dict(loss_dict)  # WAITS
        logged.append({k: round(v.item(), 4) for k, v in loss_dict_reduced.items()})
    return logged


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(TinyDetector(), find_unused_parameters=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(100 + rank)
    return train_one_epoch(model, optimizer, make_batches(rank, generator), generator)  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
