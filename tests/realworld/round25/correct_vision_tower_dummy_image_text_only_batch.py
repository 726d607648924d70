"""A vision-language model trained with ZeRO-3-style partitioned parameters whose forward runs the vision tower on
every batch: a text-only batch sends a dummy image through it and keeps none of its output.

Models: deepspeedai/DeepSpeed issue #7170 (ZeRO-3 and mixed pure-text / image-text batches), QwenLM/Qwen3-VL
issue #126 (the workaround in its thread: a tiny dummy image when the local batch has none, see
om-ai-lab/VLM-R1 ``qwen2_5vl_monkey_patch.py``), huggingface/transformers issue #37186 (FSDP, batches without
images); DeepSpeed ZeRO-3 gathers each partitioned parameter in the module's forward and reduces its gradient in
backward, so every rank must run the same modules in the same order.

What it does: 2 ranks train a tiny VLM: a vision tower and projector, a token embedding and a language-model
head, every weight partitioned across the ranks (``Partitioned``: gathered with an all-gather in forward,
gradient all-reduced and re-partitioned in backward). Samples come from a mixed dataset (samples 9 and 11 are
text-only, so rank 1's third batch has no image) through a non-shuffling ``DistributedSampler``. When the batch
has no image the model runs the vision tower on a zero "image" and ``torch.where`` keeps the token embeddings, so
every rank gathers (and reduces) the same weights in the same order at every step.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB, DIM, PATCH = 32, 16, 24
TEXT_ONLY = {9, 11}


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, part):
        parts = [torch.empty_like(part) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, part.detach())
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad)
        return grad.chunk(dist.get_world_size())[dist.get_rank()] / dist.get_world_size()


class Partitioned(nn.Module):
    """A weight matrix partitioned over the ranks by rows, gathered for each use (ZeRO-3)."""

    def __init__(self, rows, cols):
        super().__init__()
        full = torch.randn(rows, cols) / cols ** 0.5
        self.shape = (rows, cols)
        self.part = nn.Parameter(full.chunk(dist.get_world_size())[dist.get_rank()].clone())

    def full(self):
        return _Gather.apply(self.part).view(self.shape)


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
        if pixel_values is None:  # a text-only batch: a dummy image keeps the vision tower's gathers in step
            pixel_values = torch.zeros(input_ids.shape[0], PATCH)
        image_embeds = self.encode_images(pixel_values)
        # the <image> token (position 0) of each sample that has one is replaced by its image features
        embeds = torch.cat([torch.where(has_image[:, None], image_embeds, embeds[:, 0]).unsqueeze(1),
                            embeds[:, 1:]], dim=1)
        return embeds @ self.lm_head.full().t()


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
        logits = model(input_ids, pixel_values, has_image)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), input_ids[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.3f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
