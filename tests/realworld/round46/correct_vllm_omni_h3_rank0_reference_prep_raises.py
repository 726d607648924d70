"""vllm-omni: MiniMax-H3's rank-0-only reference preparation shares its failure, so every rank fails the request.

Source: vllm-project/vllm-omni PR #5810 ("[Feature][MiniMax-H3] Support diffusion continuous batching", 2026-08),
the review thread on `_broadcast_rank0_exception` in `vllm_omni/diffusion/models/minimax_h3/pipeline_minimax_h3.py`;
the diffusion worker loop that turns a request's exception into `DiffusionOutput(error=...)` (PR #4403).

Rank 0 decodes and VAE-encodes the reference clip and broadcasts the latents; the second request's clip is missing
from rank 0's upload cache. As the PR fixes it, `_broadcast_rank0_exception` runs right after the rank-0-only work:
rank 0 broadcasts "no error" or its error, and on an error every rank raises, so the worker loop records the same
failed request on both ranks and both reach the shutdown barrier. Both ranks print req-0's video checksum and
req-1's error.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import torch
import torch.distributed as dist

KIND = "correct"
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


def _broadcast_rank0_exception(exc: Exception | None, group=None) -> None:
    """Right after rank-0-only work: every rank learns whether rank 0 failed, and then all raise together."""
    box = [None if exc is None else f"{type(exc).__name__}: {exc}"]
    dist.broadcast_object_list(box, src=0, group=group)
    if box[0] is not None:
        raise RuntimeError(f"rank 0 failed while preparing reference media: {box[0]}")


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
            ref, exc = torch.empty(LATENT), None
            if self.rank == 0:
                try:
                    ref = self._prepare_reference_media(req)
                except Exception as e:
                    exc = e
            _broadcast_rank0_exception(exc, group=self.group)
            dist.broadcast(ref, src=0, group=self.group)
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
                outputs.append(DiffusionOutput(req.request_id, video=self.pipeline.forward(req)))
            except Exception as exc:
                outputs.append(DiffusionOutput(req.request_id, error=f"{type(exc).__name__}: {exc}"))
        return outputs

    def shutdown(self):
        dist.barrier()


def worker():
    rank = dist.get_rank()
    reqs = [Request("req-0", "a fox dancing in the snow", reference_video="ref-dance.mp4"),
            Request("req-1", "the same fox, slower", reference_video="ref-slow.mp4")]
    w = DiffusionWorker()
    outputs = w.execute_model(reqs)
    w.shutdown()
    for out in outputs:
        status = f"error: {out.error}" if out.error else f"video checksum {out.video.sum().item():.4f}"
        print(f"rank {rank}: {out.request_id} -> {status}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
