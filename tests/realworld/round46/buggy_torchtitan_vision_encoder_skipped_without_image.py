"""torchtitan: a multimodal model runs its FSDP-sharded vision encoder only when the sample has an image.

Source: pytorch/torchtitan PR #4777 ("Fix FSDP hanging for multimodal models", 2026-09); the Muse Glimmer model
the PR changes (its `forward`, the vision encoder wrapped in its own `fully_shard` unit).

"Consider a multimodal model that only runs its vision encoder when an image is present in the input. Suppose DP =
2 and rank 0 gets an image rank 1 does not. With FSDP on the vision encoder, rank 0 will issue an all gather, which
will be not met because rank 1 does not run its vision encoder." The cc12m data always pairs text with an image,
which hid it. Here FSDP2 (`fully_shard`) wraps the vision encoder, the decoder and the root; step 0 gives both
ranks an image, step 1 gives rank 1 text only: rank 0 all-gathers the encoder's parameters while rank 1 all-gathers
the decoder's (on gloo the sizes differ and the size check aborts a rank). The fix (the PR): always run the vision
encoder -- on an empty patch tensor when there is no image, so its all-gather is met -- add a zero-valued term from
its output to the token embeddings so its backward (and reduce-scatter) runs too, and set
`set_reduce_scatter_unused_params(True)` on the encoder.
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

KIND = "buggy"
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
        if pixel_values is not None:  # BUG
            image_tokens = self.vision_encoder(pixel_values)  # WAITS
            h = torch.cat([image_tokens, h], dim=0)
        h = self.decoder(h)  # WAITS
        return self.output(h)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Glimmer()
    fully_shard(model.vision_encoder)
    fully_shard(model.decoder)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.manual_seed(10 + rank)
    for step in range(2):
        tokens = torch.randint(0, VOCAB, (6,))
        has_image = step == 0 or rank == 0  # step 1: rank 1's sample is text-only
        pixel_values = torch.randn(4, PATCH) if has_image else None
        logits = model(tokens, pixel_values)  # WAITS
        loss = nn.functional.cross_entropy(logits[-tokens.numel():-1], tokens[1:])
        loss.backward()  # WAITS
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank}: step {step} ({'image+text' if has_image else 'text only'}) loss {loss.item():.4f}",
              flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
