"""A contrastive term over features gathered with ``torch.distributed.nn.all_gather``, dropped on a rank
whose batch has no image-text pairs: that rank's backward skips the gather's backward collective.

Modelled on mlfoundations/open_clip ``src/open_clip/loss.py`` (``gather_features(..., gather_with_grad=True)``:
``torch.cat(torch.distributed.nn.all_gather(image_features), dim=0)``; ``ClipLoss`` with ``local_loss=True``:
local features against all gathered features, labels offset by ``rank * num_logits``; ``CoCaLoss``: a
caption/classification term plus a weighted contrastive term) and open_clip issue #616 (the gather's backward
is itself a collective over the ranks' gradients); ``torch/distributed/nn/functional.py`` ``_AllGather.backward``
(on gloo an all-to-all of the gradient slices). The hang in backward is the shape of pytorch/pytorch issue
#140563 (a collective in a backward reached on some ranks only).

Every rank gathers its image and text features (the forward all-gathers match) and always has a
classification loss. The contrastive term is computed only for the samples that come with a caption; rank 0's
second batch has none, and the code then replaces the term with a constant zero. Rank 0's loss no longer
depends on the gathered tensors, so its ``backward()`` never runs the all-gathers' backward; it finishes and
goes on to the gradient all-reduce, while rank 1's backward waits in the first gather's all-to-all.
"""

import datetime

import torch
import torch.distributed as dist
import torch.distributed.nn
import torch.nn as nn

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

BATCH = 4
EMBED = 8
# which samples of each batch come with a caption (stand-in for the data: rank 0's batch 1 has none)
HAS_CAPTION = {0: [[1, 1, 0, 1], [0, 0, 0, 0], [1, 0, 1, 1]], 1: [[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 1, 1]]}


class TinyCoCa(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = nn.Linear(12, EMBED)
        self.text = nn.Embedding(20, EMBED)
        self.classifier = nn.Linear(EMBED, 5)
        self.logit_scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, images, tokens):
        image_features = nn.functional.normalize(self.visual(images), dim=-1)
        text_features = nn.functional.normalize(self.text(tokens).mean(dim=1), dim=-1)
        return image_features, text_features, self.classifier(image_features)


def gather_features(image_features, text_features):
    all_image_features = torch.cat(torch.distributed.nn.all_gather(image_features), dim=0)
    all_text_features = torch.cat(torch.distributed.nn.all_gather(text_features), dim=0)
    return all_image_features, all_text_features


def contrastive_loss(model, image_features, text_features, captioned, rank):
    all_image, all_text = gather_features(image_features, text_features)
    all_captioned = [torch.zeros_like(captioned) for _ in range(dist.get_world_size())]
    dist.all_gather(all_captioned, captioned)
    all_captioned = torch.cat(all_captioned).bool()
    local = captioned.bool()
    if local.sum() == 0:
        return torch.zeros(())  # BUG
    offset = rank * BATCH
    labels = torch.nonzero(all_captioned).squeeze(1).tolist()
    targets = torch.tensor([labels.index(offset + i) for i in torch.nonzero(local).squeeze(1).tolist()])
    scale = model.logit_scale.exp()
    logits_per_image = scale * image_features[local] @ all_text[all_captioned].T
    logits_per_text = scale * text_features[local] @ all_image[all_captioned].T
    return (nn.functional.cross_entropy(logits_per_image, targets)
            + nn.functional.cross_entropy(logits_per_text, targets)) / 2


def average_gradients(model):
    world = dist.get_world_size()
    for param in model.parameters():
        if param.grad is None:  # a parameter this rank's loss did not reach: contribute zeros
            param.grad = torch.zeros_like(param)
        dist.all_reduce(param.grad)  # WAITS
        param.grad /= world


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = TinyCoCa()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(30 + rank)
    for step, mask in enumerate(HAS_CAPTION[rank]):
        images = torch.randn(BATCH, 12, generator=data)
        tokens = torch.randint(0, 20, (BATCH, 5), generator=data)
        classes = torch.randint(0, 5, (BATCH,), generator=data)
        image_features, text_features, class_logits = model(images, tokens)
        clip = contrastive_loss(model, image_features, text_features, torch.tensor(mask), rank)
        loss = nn.functional.cross_entropy(class_logits, classes) + 0.5 * clip
        optimizer.zero_grad()
        loss.backward()  # WAITS
        average_gradients(model)  # WAITS
        optimizer.step()
        print(f"rank {rank} step {step}: loss {loss.item():.4f} (contrastive {float(clip):.4f})", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
