"""xDiT, fixed: CogVideoX on 4 ranks runs with CFG parallelism 2 x sequence parallelism 2, so the SP degree
divides the latent height (30) and every rank's patch has the same size.

Source: xdit-project/xDiT issue #358 (2024-11): "Since the height (30) of the latent space is not divisible by
4, the sp_degree cannot be 4. You can try other configurations"; PR #285 (Ulysses, Ring and CFG parallelism for
CogVideo). Modelled: the pipeline wrapper's check of the SP degree against the latent height, CFG parallelism
over the other factor of the world size (cond on one half of the ranks, uncond on the other), the split of the
latent along the height, and the patch and CFG gathers. Every rank creates every subgroup.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 15

LATENT_HEIGHT = 30  # 480 px / VAE factor 8 / patch 2
LATENT_WIDTH = 45
CHANNELS = 4


def parallel_config(world_size):
    """The largest SP degree that divides the latent height; the rest of the world goes to CFG parallelism."""
    cfg_degree = 2 if world_size % 2 == 0 else 1
    sp_degree = world_size // cfg_degree
    if LATENT_HEIGHT % sp_degree != 0:
        raise ValueError(f"sp_degree {sp_degree} must divide the latent height {LATENT_HEIGHT}")
    return cfg_degree, sp_degree


def build_groups(rank, cfg_degree, sp_degree):
    sp_group = cfg_group = None
    for c in range(cfg_degree):
        ranks = list(range(c * sp_degree, (c + 1) * sp_degree))
        group = dist.new_group(ranks)
        if rank in ranks:
            sp_group = group
    for s in range(sp_degree):
        ranks = [c * sp_degree + s for c in range(cfg_degree)]
        group = dist.new_group(ranks)
        if rank in ranks:
            cfg_group = group
    return sp_group, cfg_group


def transformer_step(patch, t):
    """Stand-in for one DiT step on the local patch (the attention all-to-alls elided)."""
    return patch - 0.1 * torch.tanh(patch) * (1 - t)


def denoise(rank, cfg_degree, sp_degree, latents, guidance_scale=6.0):
    sp_group, cfg_group = build_groups(rank, cfg_degree, sp_degree)
    cond_branch = rank // sp_degree == 0
    patches = latents.chunk(sp_degree, dim=1)
    local = patches[dist.get_rank(sp_group)] + (0.05 if cond_branch else 0.0)
    for t in (0.9, 0.5, 0.1):
        local = transformer_step(local, t)
    halves = [torch.empty_like(local) for _ in range(cfg_degree)]
    dist.all_gather(halves, local.contiguous(), group=cfg_group)
    guided = halves[1] + guidance_scale * (halves[0] - halves[1]) if cfg_degree == 2 else halves[0]
    gathered = [torch.empty_like(guided) for _ in range(sp_degree)]
    dist.all_gather(gathered, guided, group=sp_group)
    return torch.cat(gathered, dim=1)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    cfg_degree, sp_degree = parallel_config(world_size)
    latents = torch.randn(CHANNELS, LATENT_HEIGHT, LATENT_WIDTH, generator=torch.Generator().manual_seed(42))
    video_latent = denoise(rank, cfg_degree, sp_degree, latents)
    print(f"rank {rank}: cfg {cfg_degree} x sp {sp_degree}, latent {tuple(video_latent.shape)}, "
          f"checksum {video_latent.sum().item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
