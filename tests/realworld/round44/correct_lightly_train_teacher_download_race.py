"""LightlyTrain's DINOv2 teacher, fixed: only local rank 0 downloads the weights; the others wait, then all load.

Source: lightly-ai/lightly-train PR #61 ("Handle concurrent downloads", 2025: "Ensures that only the rank 0 from each
node downloads the checkpoint"), which wraps the existence check and the download in ``if is_local_rank_zero():``
and makes every rank wait for it before ``torch.load``; modelled on
``src/lightly_train/_modules/teachers/dinov2/build_teacher.py`` ``get_dinov2_teacher``.

What the item does: two ranks build a small teacher network, fetch its pretrained weights into one cache directory
(the "download" streams a serialized state dict in 16 chunks over about a second straight to the target path, as
``urlretrieve`` does), wait at a barrier, load them, and distil a student for a few DDP steps. Rank 1 builds its
teacher 0.3 s after rank 0, as in the buggy twin.
"""

import datetime
import io
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

URL = "https://dl.example.invalid/dinov2/dinov2_vits14_pretrain.pth"
CHUNKS = 16
CHUNK_DELAY = 0.06
RANK1_BUILD_SKEW = 0.3


def build_teacher() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))


def _remote_weights() -> bytes:
    torch.manual_seed(1234)
    buffer = io.BytesIO()
    torch.save(build_teacher().state_dict(), buffer)
    return buffer.getvalue()


def urlretrieve(url: str, filename: Path) -> None:
    """Stream the response body into ``filename`` chunk by chunk, as ``urllib.request.urlretrieve`` does."""
    payload = _remote_weights()
    step = len(payload) // CHUNKS + 1
    with open(filename, "wb") as fp:
        for start in range(0, len(payload), step):
            fp.write(payload[start:start + step])
            fp.flush()
            time.sleep(CHUNK_DELAY)


def shared_cache_dir() -> Path:
    holder = [tempfile.mkdtemp(prefix="lightlytrain_cache_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return Path(holder[0])


def get_dinov2_teacher(cache_dir: Path) -> torch.nn.Module:
    model = build_teacher()
    if dist.get_rank() == 1:
        time.sleep(RANK1_BUILD_SKEW)
    model.eval()
    checkpoint_path = cache_dir / Path(URL).name
    # Only local rank 0 downloads; the other ranks wait until the file is complete.
    if int(os.environ.get("LOCAL_RANK", dist.get_rank())) == 0 and not checkpoint_path.exists():
        urlretrieve(URL, checkpoint_path)
    dist.barrier()
    ckpt = torch.load(checkpoint_path, map_location="cpu")
    model.load_state_dict(ckpt, strict=True)
    return model


def distill(teacher: torch.nn.Module) -> None:
    torch.manual_seed(0)
    student = DDP(torch.nn.Linear(8, 8))
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(dist.get_rank())
    for _ in range(3):
        images = torch.randn(16, 8, generator=generator)
        with torch.no_grad():
            target = teacher(images)
        loss = torch.nn.functional.mse_loss(student(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def worker():
    cache_dir = shared_cache_dir()
    try:
        teacher = get_dinov2_teacher(cache_dir)
        distill(teacher)
    finally:
        if dist.get_rank() == 0:
            shutil.rmtree(cache_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
