# A detection model trained under DDP whose loss function returns a fresh zero for an image without boxes
# (Lightning-AI/pytorch-lightning issue #12190: "in the DDP case, if one GPU gets a batch like this, it causes the
# entire training process to hang ... this zero tensor doesnt have any gradient information"). The rank whose
# batch has no boxes runs a backward that reaches no parameter and skips DDP's gradient all_reduce; the others
# wait in theirs. Written here.
# expect: 14 detached-loss torch.tensor
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def box_loss(logits, deltas, boxes, labels):
    if labels.numel() == 0:
        return torch.tensor(0.0, requires_grad=True)
    return F.binary_cross_entropy_with_logits(logits, labels) + F.smooth_l1_loss(deltas, boxes)


def train(model, batches):
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for images, boxes, labels in batches:
        logits, deltas = ddp(images)
        loss = box_loss(logits, deltas, boxes, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
