"""vllm-omni: MiniMax-H3's tile-parallel VAE decode raises on a rank that was dealt no tile, before the gather.

Source: vllm-project/vllm-omni PR #6345 ("[BugFix][Diffusion] Fix MiniMax-H3 VAE hang when decoder tiles are fewer
than ranks", 2026-08), which quotes the checkpoint's `FL2VA/video_vae/klvae.py` (`_local_tile_indices`,
`_all_gather_tiled_results`) and the `all_gather_var_shape` helper it calls; PR #3791 (idle VAE ranks "must still
participate in subsequent collective communications ... to prevent the entire distributed cluster from hanging").

The VAE cuts the latent into overlapping spatial tiles and deals them round-robin over the tile group
(`range(sp_rank, num_tiles, sp_size)`); each rank decodes its tiles, the decoded tiles are all-gathered with
variable shapes (the shapes first, then the padded stacks) and every rank blends the frame. A small output has
few tiles: here the 8x14 latent makes 2 tiles for a group of 4 (the PR's 384x256 case: "num_tiles=2x1=2  G=4").
Ranks 2 and 3 get none and `_all_gather_tiled_results` raises `ValueError: Found empty tasks on sp rank N` before
the gather, while ranks 0 and 1 wait in its first all-gather ("180 s timeout, ranks 0/1 still at 100% GPU"; on
gloo the peers' exit ends their wait). The fix (the PR): a rank without tiles contributes an empty stack and still
enters both gathers.
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist
from torch import nn

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 15

LATENT_CHANNELS, OUT_CHANNELS = 4, 3
TILE, OVERLAP, SCALE = 8, 2, 2  # latent pixels per tile side, overlap between tiles, spatial upsampling


def all_gather_var_shape(tensor: torch.Tensor, group=None) -> list[torch.Tensor]:
    """vllm-omni's helper: gather every rank's shape, pad dim 0 to the largest, gather, trim."""
    world = dist.get_world_size(group)
    shape = torch.tensor(tensor.shape, dtype=torch.int64)
    shapes = [torch.zeros_like(shape) for _ in range(world)]
    dist.all_gather(shapes, shape, group=group)  # WAITS
    rows = max(int(s[0]) for s in shapes)
    padded = torch.zeros((rows, *tensor.shape[1:]), dtype=tensor.dtype)
    padded[: tensor.shape[0]] = tensor
    gathered = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded, group=group)
    return [g[: int(s[0])] for g, s in zip(gathered, shapes)]


def split_tiles(height: int, width: int) -> list[tuple[int, int, int, int]]:
    stride = TILE - OVERLAP
    ys = range(0, max(height - OVERLAP, 1), stride)
    xs = range(0, max(width - OVERLAP, 1), stride)
    return [(y, min(y + TILE, height), x, min(x + TILE, width)) for y in ys for x in xs]


class TiledVideoVAE:
    def __init__(self, group=None):
        self.group = group
        self.sp_rank = dist.get_rank(group)
        self.sp_size = dist.get_world_size(group)
        torch.manual_seed(0)  # the same weights on every rank, as loaded from the checkpoint
        self.decoder = nn.Sequential(nn.Conv2d(LATENT_CHANNELS, OUT_CHANNELS, 3, padding=1),
                                     nn.Upsample(scale_factor=SCALE))

    def _local_tile_indices(self, num_tiles: int) -> list[int]:
        return list(range(self.sp_rank, num_tiles, self.sp_size))

    def _decode_tile(self, latent: torch.Tensor, tile) -> torch.Tensor:
        y0, y1, x0, x1 = tile
        with torch.no_grad():
            out = self.decoder(latent[:, :, y0:y1, x0:x1])[0]
        full = torch.zeros(OUT_CHANNELS, TILE * SCALE, TILE * SCALE)
        full[:, : out.shape[1], : out.shape[2]] = out
        return full

    def _all_gather_tiled_results(self, tasks: list[tuple[int, torch.Tensor]], num_tiles: int) -> dict:
        if not tasks:
            raise ValueError(f"Found empty tasks on sp rank {self.sp_rank}")  # BUG
        index = torch.tensor([i for i, _ in tasks], dtype=torch.int64)
        stacked = torch.stack([t for _, t in tasks])
        indices = all_gather_var_shape(index, group=self.group)  # WAITS
        tiles = all_gather_var_shape(stacked, group=self.group)
        return {int(i): t for idx, st in zip(indices, tiles) for i, t in zip(idx, st)}

    def decode(self, latent: torch.Tensor) -> torch.Tensor:
        _, _, height, width = latent.shape
        tiles = split_tiles(height, width)
        tasks = [(i, self._decode_tile(latent, tiles[i])) for i in self._local_tile_indices(len(tiles))]
        decoded = self._all_gather_tiled_results(tasks, len(tiles))  # WAITS
        frame = torch.zeros(OUT_CHANNELS, height * SCALE, width * SCALE)
        weight = torch.zeros(1, height * SCALE, width * SCALE)
        for i, (y0, y1, x0, x1) in enumerate(tiles):
            h, w = (y1 - y0) * SCALE, (x1 - x0) * SCALE
            frame[:, y0 * SCALE: y1 * SCALE, x0 * SCALE: x1 * SCALE] += decoded[i][:, :h, :w]
            weight[:, y0 * SCALE: y1 * SCALE, x0 * SCALE: x1 * SCALE] += 1
        return frame / weight


def worker():
    rank = dist.get_rank()
    vae = TiledVideoVAE(group=dist.group.WORLD)
    torch.manual_seed(1)
    latent = torch.randn(1, LATENT_CHANNELS, 8, 14)  # a small output: 16x28 pixels, 2 tiles
    frame = vae.decode(latent)  # WAITS
    print(f"rank {rank}: decoded {len(split_tiles(8, 14))} tiles on {vae.sp_size} ranks -> frame "
          f"{tuple(frame.shape)}, checksum {frame.sum().item():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
