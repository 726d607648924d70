"""NVIDIA cosmos-framework: `download_file` fetches a remote input on rank 0 only, and every other rank returns the
local path at once, before rank 0 has put the file there (buggy).

Source: NVIDIA/cosmos-framework PR #65 ("Synchronize distributed remote downloads");
`cosmos_framework/inference/common/args.py`: `download_file`, `_download_file`, `_resolve_url_download`.
Multi-GPU inference: every rank resolves the sample's media URL with `download_file(url, output_dir, name)` and then
loads the input for the context-parallel model. `download_file` ran `if is_rank0(): _download_file(url, path)` and
`return str(download_path)` on every rank: rank 0 fetches into a temp dir and symlinks the result to the output
path, the other ranks return the path immediately and open it. The PR: this "lets non-rank0 code race ahead and try
to open the file before rank 0 finishes wiring up the symlink and metadata". Here rank 1 raises FileNotFoundError in
`torch.load`; rank 0, once its download is done, waits in the first all-gather of the context-parallel forward.

Stand-ins: the remote fetch (`_download_file_url`) writes a tensor built in code after 0.5 s (the network time);
the model is a frame-parallel linear block (each rank projects half of the frames, `all_gather` of the halves).
"""

import os
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15


def _output_dir():
    path = os.path.join(tempfile.gettempdir(), f"r38_cosmos_bug_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")
    os.makedirs(path, exist_ok=True)
    return path


def _download_file_url(url, path):
    time.sleep(0.5)  # stand-in: the network fetch
    frames = torch.randn(8, 4, generator=torch.Generator().manual_seed(7))
    torch.save(frames, path)


def _resolve_url_download(url, name):
    local_path = os.path.join(tempfile.mkdtemp(prefix="r38_cosmos_fetch_"), name)
    _download_file_url(url, local_path)
    return local_path


def _download_file(url, path):
    local_path = _resolve_url_download(url, os.path.basename(path))
    if os.path.lexists(path):
        os.unlink(path)
    os.symlink(local_path, path)


def download_file(url, output_dir, output_name):
    """Download a file from a URL to a local path; only rank 0 downloads."""
    download_path = os.path.join(output_dir, output_name + os.path.splitext(url)[1])
    if dist.get_rank() == 0:
        _download_file(url, download_path)
    return download_path  # BUG


def context_parallel_forward(frames, weight):
    rank, world = dist.get_rank(), dist.get_world_size()
    local = frames.chunk(world)[rank] @ weight
    parts = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(parts, local)  # WAITS
    return torch.cat(parts)


def worker():
    rank = dist.get_rank()
    output_dir = _output_dir()
    path = download_file("https://example.com/samples/vision.pt", output_dir, "vision")
    frames = torch.load(path)
    weight = torch.linspace(-1.0, 1.0, 16).reshape(4, 4)
    out = context_parallel_forward(frames, weight)  # WAITS
    print(f"[rank {rank}] output {tuple(out.shape)}, checksum {out.sum().item():.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
