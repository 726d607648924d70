"""NVIDIA cosmos-framework: `download_file` fetches a remote input on rank 0, and every rank waits for rank 0's
outcome (a broadcast that also carries rank 0's error) before it returns the path (correct).

Source: NVIDIA/cosmos-framework PR #65 ("Synchronize distributed remote downloads");
`cosmos_framework/inference/common/args.py`: `download_file`, `_download_file`, `_resolve_url_download`.
The PR's fix: rank 0 downloads inside a try block and records any error; then `broadcast_object_list([error])` from
rank 0 is the rendezvous for every rank ("instead of a plain barrier so the same rendezvous also carries any rank-0
download error"); every rank raises if rank 0 failed, and checks that the file exists before returning its path.
Then every rank loads the input and runs the frame-parallel forward (`all_gather` of the halves).

Stand-ins: the remote fetch (`_download_file_url`) writes a tensor built in code after 0.5 s (the network time).
"""

import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


def _output_dir():
    path = os.path.join(tempfile.gettempdir(), f"r38_cosmos_ok_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")
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
    return local_path


def download_file(url, output_dir, output_name):
    """Download on rank 0; every rank returns only after rank 0's outcome is known."""
    download_path = os.path.join(output_dir, output_name + os.path.splitext(url)[1])
    outcome = [None]
    if dist.get_rank() == 0:
        try:
            _download_file(url, download_path)
        except Exception as exc:  # noqa: BLE001 - carried to every rank below
            outcome[0] = f"{type(exc).__name__}: {exc}"
    dist.broadcast_object_list(outcome, src=0)
    if outcome[0] is not None:
        raise RuntimeError(f"Distributed download failed for {url}: {outcome[0]}")
    if not os.path.exists(download_path):
        raise FileNotFoundError(f"Expected downloaded file to exist after synchronization: {download_path}")
    return download_path


def context_parallel_forward(frames, weight):
    rank, world = dist.get_rank(), dist.get_world_size()
    local = frames.chunk(world)[rank] @ weight
    parts = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(parts, local)
    return torch.cat(parts)


def worker():
    rank = dist.get_rank()
    output_dir = _output_dir()
    path = download_file("https://example.com/samples/vision.pt", output_dir, "vision")
    frames = torch.load(path)
    weight = torch.linspace(-1.0, 1.0, 16).reshape(4, 4)
    out = context_parallel_forward(frames, weight)
    print(f"[rank {rank}] output {tuple(out.shape)}, checksum {out.sum().item():.4f}")
    dist.barrier()  # every rank has read the input before rank 0 removes it
    if rank == 0:
        shutil.rmtree(os.path.dirname(os.path.realpath(path)), ignore_errors=True)
        shutil.rmtree(output_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
