"""torchtitan: a multimodal model runs its FSDP-sharded vision encoder on every rank, on no patches if need be.

Source: pytorch/torchtitan PR #4777 ("Fix FSDP hanging for multimodal models", 2026-09); the Muse Glimmer model
the PR changes (its `forward`, the vision encoder wrapped in its own `fully_shard` unit).

FSDP2 wraps the vision encoder, the decoder and the root; in step 1 rank 1's sample is text only. As the PR fixes
it, the vision encoder runs on every rank -- on an empty (0, patch) tensor when there is no image, so its
parameter all-gather is met -- a zero-valued term from its output is added to the token embeddings so its backward
reduce-scatter runs as well, and the encoder has `set_reduce_scatter_unused_params(True)`. Both ranks finish both
steps.
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

PATCH, DIM, VOCAB = 12, 16, 50


class VisionEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Linear(PATCH, DIM)
        self.proj = nn.Linear(DIM, DIM)

    def forward(self, patches):
        return self.proj(torch.relu(self.patch_embed(patches)))


class Glimmer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        self.vision_encoder = VisionEncoder()
        self.decoder = nn.Sequential(nn.Linear(DIM, DIM), nn.GELU(), nn.Linear(DIM, DIM))
        self.output = nn.Linear(DIM, VOCAB)

    def forward(self, tokens, pixel_values=None):
        h = self.tok_embeddings(tokens)
        # Always run the FSDP-wrapped encoder so its all-gather is met on every rank (PR #4777).
        patches = pixel_values if pixel_values is not None else h.new_zeros(0, PATCH)
        image_tokens = self.vision_encoder(patches)
        if pixel_values is not None:
            h = torch.cat([image_tokens, h], dim=0)
        else:  # a zero-valued term keeps the encoder in the graph, so its backward reduce-scatter runs too
            h = h + 0.0 * image_tokens.sum()
        h = self.decoder(h)
        return self.output(h)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Glimmer()
    fully_shard(model.vision_encoder)
    model.vision_encoder.set_reduce_scatter_unused_params(True)
    fully_shard(model.decoder)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.manual_seed(10 + rank)
    for step in range(2):
        tokens = torch.randint(0, VOCAB, (6,))
        has_image = step == 0 or rank == 0  # step 1: rank 1's sample is text-only
        pixel_values = torch.randn(4, PATCH) if has_image else None
        logits = model(tokens, pixel_values)
        loss = nn.functional.cross_entropy(logits[-tokens.numel():-1], tokens[1:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank}: step {step} ({'image+text' if has_image else 'text only'}) loss {loss.item():.4f}",
              flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
