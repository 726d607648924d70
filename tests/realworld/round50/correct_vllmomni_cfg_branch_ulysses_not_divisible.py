"""Modelled on vllm-project/vllm-omni PR #6918 ("[Bugfix][Cosmos3] Auto-pad non-divisible Ulysses GEN sequences";
the Cosmos3 transformer's generator (GEN) path under CFG parallelism and Ulysses sequence parallelism, with the
GEN-sequence gather of PR #4301).

What the code does: four ranks form a CFG-parallel x Ulysses mesh (2 x 2). Ranks 0 and 1 run the conditioned CFG
branch and ranks 2 and 3 the unconditioned one; inside each branch the two Ulysses ranks split the GEN token
sequence, exchange keys and values within their Ulysses group for attention, and gather the GEN sequence back
(``gen_sp_gather``) before the output projection. The two branches then meet across the CFG group, which
all-gathers their outputs to form the guided prediction ``uncond + scale * (cond - uncond)`` for the denoising step.
The conditioned branch's GEN sequence has 15 tokens (twelve video tokens and three control tokens), the
unconditioned branch's 12.

The correct version of ``buggy_vllmomni_cfg_branch_ulysses_not_divisible``, with the PR's fix: the GEN hidden states
are padded to a multiple of the Ulysses degree before the split, the padded keys are masked in attention, and the
padding is stripped after the gather, so both branches reach the CFG all-gather.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 15

CFG, ULYSSES = 2, 2
HIDDEN = 8
VIDEO_TOKENS = 12
CONTROL_TOKENS = 3  # only the conditioned branch's GEN sequence carries them
GUIDANCE = 3.0


def build_mesh(rank):
    ulysses_groups = [dist.new_group([b * ULYSSES + s for s in range(ULYSSES)]) for b in range(CFG)]
    cfg_groups = [dist.new_group([b * ULYSSES + s for b in range(CFG)]) for s in range(ULYSSES)]
    branch, sp_rank = divmod(rank, ULYSSES)
    return ulysses_groups[branch], cfg_groups[sp_rank], branch, sp_rank


def sp_shard(x, sp_rank):
    if x.shape[0] % ULYSSES:
        raise ValueError(f"GEN sequence length {x.shape[0]} is not divisible by ulysses degree {ULYSSES}")
    return x.chunk(ULYSSES)[sp_rank]


def group_all_gather(x, group):
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, x.contiguous(), group=group)
    return torch.cat(parts)


class GenBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(21)
        self.qkv = torch.randn(HIDDEN, 3 * HIDDEN, generator=g) / HIDDEN**0.5
        self.proj = torch.randn(HIDDEN, HIDDEN, generator=g) / HIDDEN**0.5

    def forward(self, local, sp_group, key_mask=None):
        q, k, v = (local @ self.qkv).chunk(3, dim=-1)
        k_full, v_full = group_all_gather(k, sp_group), group_all_gather(v, sp_group)
        scores = q @ k_full.t() / HIDDEN**0.5
        if key_mask is not None:
            scores = scores.masked_fill(~key_mask, float("-inf"))
        return local + torch.softmax(scores, dim=-1) @ v_full @ self.proj


def gen_forward(block, hidden_gen, sp_group, sp_rank):
    true_len = hidden_gen.shape[0]
    pad = -true_len % ULYSSES
    padded = torch.nn.functional.pad(hidden_gen, (0, 0, 0, pad))
    key_mask = torch.arange(true_len + pad) < true_len
    local = sp_shard(padded, sp_rank)
    local = block(local, sp_group, key_mask=key_mask)
    return group_all_gather(local, sp_group)[:true_len]  # gen_sp_gather, padding stripped


def worker():
    rank = dist.get_rank()
    sp_group, cfg_group, branch, sp_rank = build_mesh(rank)
    block = GenBlock()
    g = torch.Generator().manual_seed(4)
    video = torch.randn(VIDEO_TOKENS, HIDDEN, generator=g)
    control = torch.randn(CONTROL_TOKENS, HIDDEN, generator=g)
    latents = video.clone()
    for step in range(2):
        hidden_gen = torch.cat([latents, control]) if branch == 0 else latents
        with torch.no_grad():
            out = gen_forward(block, hidden_gen, sp_group, sp_rank)[:VIDEO_TOKENS]
            both = group_all_gather(out.unsqueeze(0), cfg_group)
        cond, uncond = both[0], both[1]
        latents = latents - 0.1 * (uncond + GUIDANCE * (cond - uncond))
        if rank == 0:
            print(f"step {step}: latent norm {latents.norm().item():.4f}", flush=True)
    dist.barrier()
    print(f"rank {rank}: denoising done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
