"""qwen-image-finetune: validation samples are checked and brought to one height/width before the gather (the fix).

Source: tsiendragon/qwen-image-finetune issue #36 and PR #37 ("fix #36", 2025-10: "Prevent DDP hang by enforcing
identical height/width across validation samples with explicit shape consistency check"). Modelled on
``src/qflux/trainer/validation.py`` (``ValidationMixin``): ``reload_embeddings`` hands validation sample
``i * num_process + local_rank`` to each rank, ``run_validation`` samples latents from that rank's embeddings and
``accelerator.gather``s them (and their indices) so rank 0 can decode and log every image.

Correct twin (the PR's fix): a shape-consistency check over all validation samples at setup, run identically on
every rank (each holds the full sample list), enforcing one height/width -- here the config's target size, which
every sample is resized to before its embeddings are made -- so every rank's latents have the same shape.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

VALIDATION_SAMPLES = [  # config.validation.samples: prompt and the control image's size
    {"prompt": "make the sky red", "height": 64, "width": 64},
    {"prompt": "add a hat", "height": 96, "width": 64},
]
CHANNELS = 8
TARGET_SIZE = (64, 64)  # processor.init_args.target_size


def check_shape_consistency(samples):
    sizes = {(s["height"], s["width"]) for s in samples}
    if len(sizes) > 1:
        raise ValueError(f"validation samples must share one height/width under DDP, got {sorted(sizes)}")


def setup_validation(samples):
    resized = [dict(s, height=TARGET_SIZE[0], width=TARGET_SIZE[1]) for s in samples]
    check_shape_consistency(resized)
    return resized


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
    dist.all_gather(out, tensor.contiguous())
    return torch.cat(out, dim=0)


def run_validation(embeddings):
    lat_chunks, idx_chunks = [], []
    for emb in embeddings:
        with torch.inference_mode():
            latents = sampling_from_embeddings(emb)
        g_lat = gather(latents)
        g_idx = gather(emb["idx"])
        lat_chunks.append(g_lat)
        idx_chunks.append(g_idx)
    if dist.get_rank() == 0:
        all_latents = torch.cat(lat_chunks)
        print(f"rank 0: decoded {all_latents.shape[0]} validation images, latent sum {all_latents.sum():.4f}",
              flush=True)
    dist.barrier()


def worker():
    samples = setup_validation(VALIDATION_SAMPLES)
    embeddings = reload_embeddings(samples)
    run_validation(embeddings)
    print(f"rank {dist.get_rank()}: validation done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
