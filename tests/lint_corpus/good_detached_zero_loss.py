# The fix of Lightning-AI/pytorch-lightning issue #12190's hang: for an image without boxes the loss is a zero
# built from the model's outputs, so the backward reaches every parameter and DDP's gradient all_reduce runs on
# every rank. Also a fresh zero returned for a switch of the configuration, which every rank takes alike. Written
# here.
# expect: none
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def box_loss(logits, deltas, boxes, labels):
    if labels.numel() == 0:
        return logits.sum() * 0.0 + deltas.sum() * 0.0
    return F.binary_cross_entropy_with_logits(logits, labels) + F.smooth_l1_loss(deltas, boxes)


def aux_loss(features, enabled):
    if not AUX_ENABLED:
        return torch.zeros(())
    return features.pow(2).mean()


AUX_ENABLED = False


def train(model, batches):
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for images, boxes, labels in batches:
        logits, deltas = ddp(images)
        loss = box_loss(logits, deltas, boxes, labels) + aux_loss(logits, True)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
