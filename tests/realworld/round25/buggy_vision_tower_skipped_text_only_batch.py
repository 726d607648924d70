"""A vision-language model trained with ZeRO-3-style partitioned parameters, whose forward runs the vision tower
only when the batch has images.

Models: deepspeedai/DeepSpeed issue #7170 ("zero3 training hangs when with mixed multimodal dataset": pure-text
and image-text batches on different GPUs), QwenLM/Qwen3-VL issue #126 (ZeRO-3 hangs when some samples have no
image; the workaround of a tiny dummy image when the global batch has images but the local one does not),
huggingface/transformers issue #37186 ("Qwen FSDP model training hangs when some batches do not contain
images"), the LLaVA-style ``if pixel_values is not None: image_features = self.vision_tower(...)`` merge;
DeepSpeed ZeRO-3 gathers each partitioned parameter in the module's forward (and reduce-scatters its gradient in
backward), so every rank must run the same modules in the same order.

What it does: 2 ranks train a tiny VLM: a vision tower and projector, a token embedding and a language-model
head, every weight partitioned across the ranks (``Partitioned``: gathered with an all-gather in forward,
gradient all-reduced and re-partitioned in backward). Samples come from a mixed dataset through a non-shuffling
``DistributedSampler``; the collator leaves ``pixel_values`` as ``None`` when no sample of the batch has an image.

The bug: the forward skips the vision tower on a text-only batch. Samples 9 and 11 are text-only, so rank 1's
third batch has no image: at step 2 rank 1 starts with the language model's gather while rank 0 gathers the
vision tower's weight (a different, smaller size). The ranks' collectives no longer match: rank 0 aborts (gloo
receives rank 1's larger message into the vision buffer: SIGABRT), and rank 1 fails with "Connection reset by
peer" either in that same gather (the language-model head's, in step 2's forward) or, when its gather completed
before rank 0 went down, in the first all-reduce of step 2's backward; both places are marked as waiting lines.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB, DIM, PATCH = 32, 16, 24
TEXT_ONLY = {9, 11}


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, part):
        parts = [torch.empty_like(part) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, part.detach())  # WAITS
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad)  # WAITS
        return grad.chunk(dist.get_world_size())[dist.get_rank()] / dist.get_world_size()


class Partitioned(nn.Module):
    """A weight matrix partitioned over the ranks by rows, gathered for each use (ZeRO-3)."""

    def __init__(self, rows, cols):
        super().__init__()
        full = torch.randn(rows, cols) / cols ** 0.5
        self.shape = (rows, cols)
        self.part = nn.Parameter(full.chunk(dist.get_world_size())[dist.get_rank()].clone())

    def full(self):
        return _Gather.apply(self.part).view(self.shape)  # WAITS


class TinyVLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.vision_tower = Partitioned(DIM, PATCH)
        self.projector = Partitioned(DIM, DIM)
        self.embed_tokens = Partitioned(VOCAB, DIM)
        self.lm_head = Partitioned(VOCAB, DIM)

    def encode_images(self, pixel_values):
        feats = torch.tanh(pixel_values @ self.vision_tower.full().t())
        return feats @ self.projector.full().t()

    def forward(self, input_ids, pixel_values, has_image):
        embeds = F.embedding(input_ids, self.embed_tokens.full())
        if pixel_values is not None:  # BUG
            image_embeds = self.encode_images(pixel_values)
            # the <image> token (position 0) of each sample that has one is replaced by its image features
            embeds = torch.cat([torch.where(has_image[:, None], image_embeds, embeds[:, 0]).unsqueeze(1),
                                embeds[:, 1:]], dim=1)
        return embeds @ self.lm_head.full().t()  # WAITS


class MixedDataset(torch.utils.data.Dataset):
    def __init__(self, n=16):
        g = torch.Generator().manual_seed(3)
        self.tokens = torch.randint(0, VOCAB, (n, 6), generator=g)
        self.pixels = torch.randn(n, PATCH, generator=g)

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, i):
        return {"input_ids": self.tokens[i], "pixel_values": None if i in TEXT_ONLY else self.pixels[i]}


def collate(samples):
    has_image = torch.tensor([s["pixel_values"] is not None for s in samples])
    pixel_values = None
    if has_image.any():
        pixel_values = torch.stack([s["pixel_values"] if s["pixel_values"] is not None else torch.zeros(PATCH)
                                    for s in samples])
    return torch.stack([s["input_ids"] for s in samples]), pixel_values, has_image


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = TinyVLM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    dataset = MixedDataset()
    loader = DataLoader(dataset, batch_size=2, sampler=DistributedSampler(dataset, shuffle=False), collate_fn=collate)
    for step, (input_ids, pixel_values, has_image) in enumerate(loader):
        logits = model(input_ids, pixel_values, has_image)  # WAITS
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), input_ids[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()  # WAITS
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
