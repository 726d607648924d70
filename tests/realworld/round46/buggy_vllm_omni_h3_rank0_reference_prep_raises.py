"""vllm-omni: MiniMax-H3's reference-video preparation runs on rank 0 only; when it raises, rank 0 skips the broadcast.

Source: vllm-project/vllm-omni PR #5810 ("[Feature][MiniMax-H3] Support diffusion continuous batching", 2026-08),
the review thread on `_broadcast_rank0_exception` in `vllm_omni/diffusion/models/minimax_h3/pipeline_minimax_h3.py`
("H3's reference-video/audio prep runs only on rank 0. If rank 0 raises there, it skips the downstream
dist.broadcast and other ranks hang forever. ... This is a hang bugfix, not a new feature"); the diffusion worker
loop that turns a request's exception into `DiffusionOutput(error=...)` (PR #4403).

The DiT group serves each request on every rank: the reference clip is decoded and VAE-encoded on rank 0 alone and
the reference latents are broadcast to the group, then every rank runs the (sequence-parallel) denoising steps, each
ending in an all-reduce. The worker loop catches a request's exception and returns an error output, and the
executor's shutdown ends with a barrier. The second request names a reference clip that is missing on rank 0's
upload cache: rank 0's preparation raises, its loop records the error and goes on to the shutdown barrier, while
rank 1 waits in the reference broadcast -- both until the 15 s timeout. The fix (the PR): `_broadcast_rank0_exception`
right after the rank-0-only work, so every rank raises together and the request fails on all of them.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

LATENT = (4, 6)
UPLOADS = {"ref-dance.mp4": torch.linspace(0, 1, 24).reshape(4, 6)}  # rank 0's media cache (the API server's node)


@dataclass
class Request:
    request_id: str
    prompt: str
    reference_video: str | None = None


@dataclass
class DiffusionOutput:
    request_id: str
    video: torch.Tensor | None = None
    error: str | None = None


def _dit_rank_world():
    group = dist.group.WORLD
    return group, dist.get_rank(group), dist.get_world_size(group)


class MiniMaxH3Pipeline:
    def __init__(self):
        self.group, self.rank, self.world = _dit_rank_world()

    def _prepare_reference_media(self, req: Request) -> torch.Tensor:
        if req.reference_video not in UPLOADS:
            raise FileNotFoundError(f"reference video {req.reference_video!r} not found")
        return UPLOADS[req.reference_video] * 2 - 1  # decode + VAE-encode, on rank 0 only

    def forward(self, req: Request) -> torch.Tensor:
        torch.manual_seed(len(req.prompt))
        latents = torch.randn(LATENT)
        if req.reference_video is not None:
            ref = torch.empty(LATENT)
            if self.rank == 0:
                ref = self._prepare_reference_media(req)  # BUG
            dist.broadcast(ref, src=0, group=self.group)  # WAITS
            latents = latents + 0.5 * ref
        for _ in range(3):  # sequence-parallel denoising steps
            update = latents.sum(dim=0, keepdim=True) / self.world
            dist.all_reduce(update, group=self.group)
            latents = 0.9 * latents - 0.01 * update
        return latents


class DiffusionWorker:
    def __init__(self):
        self.pipeline = MiniMaxH3Pipeline()

    def execute_model(self, reqs: list[Request]) -> list[DiffusionOutput]:
        outputs = []
        for req in reqs:
            try:
                outputs.append(DiffusionOutput(req.request_id, video=self.pipeline.forward(req)))  # WAITS
            except Exception as exc:
                outputs.append(DiffusionOutput(req.request_id, error=f"{type(exc).__name__}: {exc}"))
        return outputs

    def shutdown(self):
        dist.barrier()  # WAITS


def worker():
    rank = dist.get_rank()
    reqs = [Request("req-0", "a fox dancing in the snow", reference_video="ref-dance.mp4"),
            Request("req-1", "the same fox, slower", reference_video="ref-slow.mp4")]
    w = DiffusionWorker()
    outputs = w.execute_model(reqs)  # WAITS
    w.shutdown()  # WAITS
    for out in outputs:
        status = f"error: {out.error}" if out.error else f"video checksum {out.video.sum().item():.4f}"
        print(f"rank {rank}: {out.request_id} -> {status}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
