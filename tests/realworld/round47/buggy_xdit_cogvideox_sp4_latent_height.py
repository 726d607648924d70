"""xDiT: CogVideoX's latent is split across the sequence-parallel ranks along its height; with 4 SP ranks the
height (30) does not divide, so the ranks hold patches of different sizes and the patch gather mismatches.

Source: xdit-project/xDiT issue #358 ("why cogvideo only support 4gpus dit parallel?", 2024-11); the maintainer:
"We slice the video in the latent space in the height dimension and distribute each video patch to a GPU. Since
the height (30) of the latent space is not divisible by 4, the sp_degree cannot be 4. You can try other
configurations"; PR #285 ("complete sequence parallelism for CogVideo": Ulysses, Ring and CFG parallelism).
Modelled: the CogVideoX pipeline wrapper's split of the latent along the height over the SP ranks, one
transformer step on the local patch, and the gather of the patches that reassembles the latent.

4 ranks, ulysses_degree 4: `torch.chunk` gives heights 8, 8, 8 and 6; every rank allocates the gather buffers
from its own patch, so rank 3 exchanges 6-row patches while ranks 0-2 exchange 8-row ones (an error on gloo, a
hang or garbage on NCCL).

The bug: the SP degree is taken from the launch size without checking that it divides the latent height.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 15

LATENT_HEIGHT = 30  # 480 px / VAE factor 8 / patch 2
LATENT_WIDTH = 45
CHANNELS = 4


def transformer_step(patch, t):
    """Stand-in for one DiT step on the local patch (the attention all-to-alls elided)."""
    return patch - 0.1 * torch.tanh(patch) * (1 - t)


def denoise(rank, sp_degree, latents, group=None):
    patches = latents.chunk(sp_degree, dim=1)  # BUG
    local = patches[dist.get_rank(group)]
    for t in (0.9, 0.5, 0.1):
        local = transformer_step(local, t)
    gathered = [torch.empty_like(local) for _ in range(sp_degree)]
    dist.all_gather(gathered, local.contiguous(), group=group)  # WAITS
    return torch.cat(gathered, dim=1)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    latents = torch.randn(CHANNELS, LATENT_HEIGHT, LATENT_WIDTH, generator=torch.Generator().manual_seed(42))
    video_latent = denoise(rank, world_size, latents)  # WAITS
    print(f"rank {rank}: latent {tuple(video_latent.shape)}, checksum {video_latent.sum().item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
