"""Correct: every rank runs the control-input preprocessor and writes its output under a file name of its own, so no
rank loads a tensor another rank is still writing.

Source: nvidia-cosmos/cosmos-transfer1 PR #190 ("fixed race condition in file save", 2025-08: "create rank based file
names of preprocessor files to avoid file corruption (one rank consuming created file while other rank still
writing)"); ``cosmos_transfer1/diffusion/inference/preprocessors.py`` ``Preprocessors.__call__`` /
``gen_input_control``: for a ``seg`` hint with a ``control_weight_prompt`` the preprocessor runs SAM and writes
``os.path.join(output_folder, f"{hint_key}_control_weight.pt")`` (likewise ``regional_context_{i}.pt`` and
``{hint_key}_input_control.mp4``); the PR's note: "this class will run on each rank, so each file name must be unique
per rank to avoid potential file corruption". The pipeline then loads the weight tensor and runs the context-parallel
diffusion model, whose attention all-gathers across the ranks.

Here two ranks preprocess the same clip into one shared output folder. Writing the mask is slow (the item writes the
serialized tensor in two parts, as a progressive writer does); rank 1 starts later, truncates the file while rank 0
has finished writing, and is still writing when rank 0 loads it. Rank 0's ``torch.load`` fails on the half-written
archive and rank 0 dies; rank 1 loads its own complete file and waits in the first context-parallel all-gather --
that is the buggy twin.

The fix (the PR): per-rank file names, ``f"{hint_key}_control_weight_{int(os.environ.get('LOCAL_RANK', 0))}.pt"``.
The item falls back to the global rank where ``LOCAL_RANK`` is not set (one node here, so they agree).
"""

import contextlib
import glob
import io
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


def shared_tmp_dir(prefix):
    """A folder every rank sees (rank 0 makes it and broadcasts its path), with one presence marker per rank."""
    box = [tempfile.mkdtemp(prefix=prefix) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    open(os.path.join(box[0], f".alive{dist.get_rank()}"), "w").close()
    return box[0]


def release_tmp_dir(path):
    """The last rank to leave removes the folder; no collective, since a rank may leave on an error."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(path, f".alive{dist.get_rank()}"))
    if not glob.glob(os.path.join(path, ".alive*")):
        shutil.rmtree(path, ignore_errors=True)


def write_progressively(obj, path, pause):
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
        f.flush()
        time.sleep(pause)  # the encoder is still working on the rest
        f.write(data[len(data) // 2:])


class Preprocessors:
    def __init__(self, rank):
        self.rank = rank

    def segmentation(self, in_video, out_tensor, prompt, weight_scaler):
        time.sleep(0.0 if self.rank == 0 else 0.5)  # rank 1's SAM model comes up a little later
        mask = (in_video.mean(dim=0, keepdim=True) > 0).float() * weight_scaler
        write_progressively(mask, out_tensor, pause=0.1 if self.rank == 0 else 3.0)

    def __call__(self, input_video, output_folder, control_inputs):
        for hint_key, control_input in control_inputs.items():
            if control_input.get("control_weight_prompt") is not None and hint_key == "seg":
                local_rank = int(os.environ.get("LOCAL_RANK", self.rank))
                out_tensor = os.path.join(output_folder, f"{hint_key}_control_weight_{local_rank}.pt")
                weight_scaler = control_input.get("control_weight", 1.0)
                self.segmentation(input_video, out_tensor, control_input["control_weight_prompt"], weight_scaler)
                control_input["control_weight"] = out_tensor
        return control_inputs


def context_parallel_denoise(latent, control_weight):
    shards = [torch.empty_like(latent) for _ in range(dist.get_world_size())]
    dist.all_gather(shards, latent)
    return torch.cat(shards) * control_weight.mean()


def generate(rank, output_folder):
    video = torch.randn(8, 16, generator=torch.Generator().manual_seed(0))  # the same clip on every rank
    controls = {"seg": {"control_weight_prompt": "robot arm", "control_weight": 1.0}}
    controls = Preprocessors(rank)(video, output_folder, controls)
    time.sleep(1.5 if rank == 0 else 0.0)  # rank 0 prepares the text embeddings before loading the mask
    control_weight = torch.load(controls["seg"]["control_weight"])
    latent = torch.randn(2, 16, generator=torch.Generator().manual_seed(rank))
    return context_parallel_denoise(latent, control_weight)


def worker():
    rank = dist.get_rank()
    output_folder = shared_tmp_dir("bl_r42_cosmos1_")  # every rank writes into the same output folder
    try:
        out = generate(rank, output_folder)
        print(f"rank {rank}: generated {tuple(out.shape)}")
    finally:
        release_tmp_dir(output_folder)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
