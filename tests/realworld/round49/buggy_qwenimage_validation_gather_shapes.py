"""qwen-image-finetune: validation samples of different sizes make the per-rank latents differ in shape.

Source: tsiendragon/qwen-image-finetune issue #36 and PR #37 ("fix #36", 2025-10: "Prevent DDP hang by enforcing
identical height/width across validation samples with explicit shape consistency check"). Modelled on
``src/qflux/trainer/validation.py`` (``ValidationMixin``): ``reload_embeddings`` hands validation sample
``i * num_process + local_rank`` to each rank, ``run_validation`` samples latents from that rank's embeddings and
``accelerator.gather``s them (and their indices) so rank 0 can decode and log every image.

Bug: the validation samples come from config entries whose images have different sizes (no common target size),
so ``height``/``width`` -- and hence the packed latent sequence length ``(h/16)*(w/16)`` -- differ between the
rank-0 and rank-1 samples. The gather of latents of different shapes cannot complete (a hang on NCCL; on gloo the
exchange fails or times out).
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VALIDATION_SAMPLES = [  # config.validation.samples: prompt and the control image's size
    {"prompt": "make the sky red", "height": 64, "width": 64},
    {"prompt": "add a hat", "height": 96, "width": 64},
]
CHANNELS = 8


def setup_validation(samples):
    return [dict(s) for s in samples]


def reload_embeddings(samples):
    rank, world = dist.get_rank(), dist.get_world_size()
    per_rank = max(1, len(samples) // world)
    embeddings = []
    for i in range(per_rank):
        idx = (i * world + rank) % len(samples)
        s = samples[idx]
        torch.manual_seed(idx)
        embeddings.append({"prompt_embeds": torch.randn(1, 4, CHANNELS), "height": s["height"],
                           "width": s["width"], "idx": torch.tensor([float(idx)])})
    return embeddings


def sampling_from_embeddings(emb, steps=3):
    seq = (emb["height"] // 16) * (emb["width"] // 16)  # packed 2x2 patches of the 8x-downsampled latent
    latents = torch.randn(1, seq, CHANNELS)
    for _ in range(steps):
        latents = latents - 0.1 * (latents - emb["prompt_embeds"].mean(dim=1, keepdim=True))
    return latents


def gather(tensor):
    """accelerate's ``gather``: every rank's tensor, concatenated along dim 0."""
    out = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor.contiguous())  # WAITS
    return torch.cat(out, dim=0)


def run_validation(embeddings):
    lat_chunks, idx_chunks = [], []
    for emb in embeddings:
        with torch.inference_mode():
            latents = sampling_from_embeddings(emb)
        g_lat = gather(latents)  # WAITS
        g_idx = gather(emb["idx"])
        lat_chunks.append(g_lat)
        idx_chunks.append(g_idx)
    if dist.get_rank() == 0:
        all_latents = torch.cat(lat_chunks)
        print(f"rank 0: decoded {all_latents.shape[0]} validation images, latent sum {all_latents.sum():.4f}",
              flush=True)
    dist.barrier()


def worker():
    samples = setup_validation(VALIDATION_SAMPLES)  # BUG
    embeddings = reload_embeddings(samples)
    run_validation(embeddings)  # WAITS
    print(f"rank {dist.get_rank()}: validation done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
