"""Modelled on mlfoundations/open_clip issue #1121, PR #1134, issue #1152 and PR #1155 (``open_clip_train/train.py``
``evaluate`` / ``zero_shot_eval``, ``open_clip_train/main.py``'s epoch loop; ``open_clip/model.py``'s ``CLIP``).

What the code does: a tiny CLIP (an image tower and a text tower whose causal attention mask is a non-persistent
buffer, as ``CLIP.__init__`` registers ``attn_mask``) is trained under DDP for two epochs of contrastive steps.
After each epoch ``main`` calls ``evaluate``, which runs on the master rank only (``if not is_master(args): return
metrics``): zero-shot classification (class-prompt embeddings, then image logits against them) and, when a ``val``
split is configured, a validation loss. PR #1134 (fixing #1121, where the other ranks finished while rank 0 was
still evaluating through DDP) added ``model = model.module`` inside the ``val`` branch and a ``dist.barrier()``
after ``evaluate`` in ``main``.

The bug (issue #1152): the unwrap sits only in the ``val`` branch, after ``zero_shot_eval(model, ...)`` has already
run on the still DDP-wrapped model. DDP's forward first broadcasts the module buffers from rank 0 (the CLIP
``attn_mask``), a collective that ranks > 0 never join: they returned early and wait in ``main``'s barrier, while
rank 0 waits in the buffer broadcast of the zero-shot forward. On this item's config there is no ``val`` split, so
the unwrap is never reached. Fixed by PR #1155: unwrap once at the top of ``evaluate``, right after the master guard.
"""

import datetime
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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
            _, class_embeddings, _ = model(text=texts)  # WAITS
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
    model.eval()

    zero_shot_metrics = zero_shot_eval(model, data, epoch, args)  # BUG  # WAITS
    metrics.update(zero_shot_metrics)

    if "val" in data:
        if args.distributed:
            model = model.module  # unwrap DDP for single process eval
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
        metrics = evaluate(model, data, epoch + 1, args)  # WAITS
        if is_master(args):
            print(f"epoch {epoch + 1}: {metrics}", flush=True)
        dist.barrier()  # WAITS
    print(f"rank {args.rank}: training done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
