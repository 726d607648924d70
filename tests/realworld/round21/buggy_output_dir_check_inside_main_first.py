"""Last-checkpoint detection placed inside ``main_process_first`` next to rank 0's write (buggy).

Models: huggingface/transformers ``examples/pytorch/language-modeling/run_clm.py`` ("Detecting last checkpoint":
``get_last_checkpoint(output_dir)``; ``if last_checkpoint is None and len(os.listdir(output_dir)) > 0: raise
ValueError("Output directory ... already exists and is not empty. Use --overwrite_output_dir ...")``),
``trainer_utils.get_last_checkpoint``, and ``TrainingArguments.main_process_first`` (the main process runs the block
first, the others after a barrier); the many project copies of that block moved into ``detect_last_checkpoint``
helpers.

BUG: ``setup_output_dir`` wraps the detection and the write of ``run_args.json`` in ``main_process_first`` ("so
that only rank 0 creates things first"). Rank 0 detects an empty dir and writes its file, then releases the
others; rank 1 detects a dir that is "not empty" and has no checkpoint and raises the ``ValueError``. Rank 0 goes
on into the DDP constructor and waits for a peer that is gone. A rerun that finds a checkpoint would not fail. The run trains a DDP model and rank 0 saves
``checkpoint-<step>`` at the end. The output dir is a fresh temp dir (name broadcast from rank 0), so this is a
first run: no checkpoint, nothing to resume.
"""
import json
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

_re_checkpoint = re.compile(r"^checkpoint-(\d+)$")


def get_last_checkpoint(folder):
    found = [p for p in os.listdir(folder) if _re_checkpoint.search(p) and os.path.isdir(os.path.join(folder, p))]
    if not found:
        return None
    return os.path.join(folder, max(found, key=lambda p: int(_re_checkpoint.search(p).group(1))))


def detect_last_checkpoint(output_dir, overwrite_output_dir=False):
    last_checkpoint = None
    if os.path.isdir(output_dir) and not overwrite_output_dir:
        last_checkpoint = get_last_checkpoint(output_dir)
        if last_checkpoint is None and len(os.listdir(output_dir)) > 0:
            raise ValueError(
                f"Output directory ({output_dir}) already exists and is not empty. "
                "Use --overwrite_output_dir to overcome."
            )
    return last_checkpoint


def save_run_args(output_dir, args):
    with open(os.path.join(output_dir, "run_args.json"), "w") as f:
        json.dump(args, f)


@contextmanager
def main_process_first(is_main):
    if not is_main:
        dist.barrier()
    try:
        yield
    finally:
        if is_main:
            dist.barrier()


def setup_output_dir(args):
    with main_process_first(dist.get_rank() == 0):
        last_checkpoint = detect_last_checkpoint(args["output_dir"])  # BUG
        if dist.get_rank() == 0:
            save_run_args(args["output_dir"], args)
    return last_checkpoint


def train(args, last_checkpoint):
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    start = 0
    if last_checkpoint is not None:
        model.load_state_dict(torch.load(os.path.join(last_checkpoint, "model.pt")))
        start = int(_re_checkpoint.search(os.path.basename(last_checkpoint)).group(1))
    ddp = DDP(model)  # WAITS
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for step in range(start, args["max_steps"]):
        x = torch.randn(8, 4, generator=g)
        loss = (ddp(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        ckpt = os.path.join(args["output_dir"], f"checkpoint-{args['max_steps']}")
        os.makedirs(ckpt)
        torch.save(model.state_dict(), os.path.join(ckpt, "model.pt"))
        print(f"saved {os.path.basename(ckpt)}, last loss {loss.item():.4f}", flush=True)
    dist.barrier()


def worker():
    rank = dist.get_rank()
    names = [tempfile.mkdtemp(prefix="r21_outdir_") if rank == 0 else None]
    dist.broadcast_object_list(names, src=0)
    args = {"output_dir": names[0], "max_steps": 6, "lr": 0.1}
    try:
        last_checkpoint = setup_output_dir(args)
        train(args, last_checkpoint)  # WAITS
    finally:
        if rank == 0:
            shutil.rmtree(names[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
