"""Modelled on mlfoundations/open_clip issue #1121, PR #1134, issue #1152 and PR #1155 (``open_clip_train/train.py``
``evaluate`` / ``zero_shot_eval``, ``open_clip_train/main.py``'s epoch loop; ``open_clip/model.py``'s ``CLIP``).

What the code does: a tiny CLIP (an image tower and a text tower whose causal attention mask is a non-persistent
buffer, as ``CLIP.__init__`` registers ``attn_mask``) is trained under DDP for two epochs of contrastive steps.
After each epoch ``main`` calls ``evaluate``, which runs on the master rank only (``if not is_master(args): return
metrics``): zero-shot classification (class-prompt embeddings, then image logits against them) and, when a ``val``
split is configured, a validation loss; every rank then meets in the barrier PR #1134 added after ``evaluate``.

The correct version of ``buggy_openclip_zero_shot_eval_through_ddp``: as PR #1155 does, ``evaluate`` unwraps the
DDP model once at its top, right after the master guard, so the zero-shot forward and the ``val`` branch both run
on the bare module and start no collective of their own (DDP's buffer broadcast) while ranks > 0 wait in the
barrier.
"""

import datetime
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

EMBED, CTX, VOCAB, IMG = 8, 4, 16, 12
CLASSNAMES = ["cat", "dog", "ship"]
TEMPLATES = [lambda c: f"a photo of a {c}", lambda c: f"a sketch of a {c}"]


class TinyCLIP(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = nn.Linear(IMG, EMBED)
        self.token_embedding = nn.Embedding(VOCAB, EMBED)
        self.positional_embedding = nn.Parameter(torch.randn(CTX, EMBED) * 0.01)
        self.attn = nn.MultiheadAttention(EMBED, 2, batch_first=True)
        self.text_projection = nn.Linear(EMBED, EMBED, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(2.0))
        mask = torch.full((CTX, CTX), float("-inf")).triu_(1)
        self.register_buffer("attn_mask", mask, persistent=False)

    def encode_image(self, image):
        return F.normalize(self.visual(image), dim=-1)

    def encode_text(self, text):
        x = self.token_embedding(text) + self.positional_embedding
        x, _ = self.attn(x, x, x, attn_mask=self.attn_mask, need_weights=False)
        return F.normalize(self.text_projection(x[:, -1]), dim=-1)

    def forward(self, image=None, text=None):
        image_features = self.encode_image(image) if image is not None else None
        text_features = self.encode_text(text) if text is not None else None
        return image_features, text_features, self.logit_scale.exp()


def tokenize(texts):
    ids = [[sum(map(ord, word)) % VOCAB for word in t.split()][-CTX:] for t in texts]
    return torch.tensor([[0] * (CTX - len(i)) + i for i in ids])


def is_master(args):
    return args.rank == 0


def train_one_epoch(model, data, optimizer):
    model.train()
    for images, texts in data["train"]:
        image_features, text_features, scale = model(images, texts)
        logits = scale * image_features @ text_features.t()
        labels = torch.arange(len(images))
        loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def zero_shot_eval(model, data, epoch, args):
    with torch.no_grad():
        weights = []
        for classname in CLASSNAMES:
            texts = tokenize([template(classname) for template in TEMPLATES])
            _, class_embeddings, _ = model(text=texts)
            weights.append(F.normalize(class_embeddings.mean(dim=0), dim=-1))
        classifier = torch.stack(weights, dim=1)
        images, targets = data["imagenet-val"]
        image_features, _, _ = model(image=images)
        top1 = ((image_features @ classifier).argmax(dim=1) == targets).float().mean().item()
    return {"imagenet-zeroshot-val-top1": top1}


def evaluate(model, data, epoch, args):
    metrics = {}
    if not is_master(args):
        return metrics
    # unwrap DDP once here so zero_shot_eval and the val branch run on the bare module
    if args.distributed and hasattr(model, "module"):
        model = model.module
    model.eval()

    zero_shot_metrics = zero_shot_eval(model, data, epoch, args)
    metrics.update(zero_shot_metrics)

    if "val" in data:
        with torch.no_grad():
            images, texts = data["val"]
            image_features, text_features, scale = model(images, texts)
            logits = scale * image_features @ text_features.t()
            metrics["val_loss"] = F.cross_entropy(logits, torch.arange(len(images))).item()
    return metrics


def worker():
    args = SimpleNamespace(rank=dist.get_rank(), distributed=True, epochs=2)
    torch.manual_seed(0)
    model = DDP(TinyCLIP())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(100 + args.rank)
    captions = [f"a photo of a {CLASSNAMES[i % 3]}" for i in range(4)]
    train = [(torch.randn(4, IMG, generator=gen), tokenize(captions)) for _ in range(2)]
    data = {"train": train, "imagenet-val": (torch.randn(6, IMG, generator=gen), torch.arange(6) % 3)}
    for epoch in range(args.epochs):
        train_one_epoch(model, data, optimizer)
        metrics = evaluate(model, data, epoch + 1, args)
        if is_master(args):
            print(f"epoch {epoch + 1}: {metrics}", flush=True)
        dist.barrier()
    print(f"rank {args.rank}: training done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
