"""Marigold v2 training: every rank runs `setup_run()` and creates the run directory with
`os.makedirs(out_dir_run, exist_ok=False)`, so the rank that comes second raises FileExistsError (buggy).

Source: huawei-bayerlab/marigold-v2 issue #6 ("Training: multi-GPU run-directory collision ...", part 1) and PR #7
("Fix run-directory creation during multi-GPU training"); `marigoldv2/script/train/setup_run.py` `setup_run`
(line 77 in the report), called from `marigoldv2/script/train/train.py` before the `Accelerator` is made.
The issue: "Every rank calls `setup_run()` before `Accelerator` is initialized and executes
`os.makedirs(out_dir_run, exist_ok=False)`. With the default run naming, all ranks use the same path. One creates
it and another raises `FileExistsError`. The `is_rank0` guard only protects later configuration saving, not this
directory creation" -- "either rank could lose the race". Here rank 1 comes second and raises; rank 0 saves the
config, goes on to training and waits in DDP's start-up collectives.

Stand-ins: rank 1's configuration loading takes 0.3 s longer than rank 0's (which rank loses is a race in the
report); the training is a tiny DDP regression built in code; the `Accelerator` is the process group the harness
made.
"""

import json
import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15


def load_config(rank):
    if rank == 1:
        time.sleep(0.3)  # stand-in: rank 1 loads its configuration more slowly
    return {"job_name": "marigold_depth_v2", "lr": 0.05, "max_iter": 3}


def setup_run(cfg, base_output_dir, is_rank0):
    out_dir_run = os.path.join(base_output_dir, cfg["job_name"])
    os.makedirs(out_dir_run, exist_ok=False)  # BUG
    if is_rank0:
        with open(os.path.join(out_dir_run, "config.json"), "w") as f:
            json.dump(cfg, f)
    return out_dir_run


def train(cfg, out_dir_run):
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))  # WAITS
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
    g = torch.Generator().manual_seed(dist.get_rank())
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)
    for _ in range(cfg["max_iter"]):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def worker():
    rank = dist.get_rank()
    base = os.path.join(tempfile.gettempdir(), f"r38_marigold_bug_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")
    cfg = load_config(rank)
    out_dir_run = setup_run(cfg, base, is_rank0=(rank == 0))
    loss = train(cfg, out_dir_run)  # WAITS
    print(f"[rank {rank}] trained in {out_dir_run}, last loss {loss:.4f}")
    dist.barrier()
    if rank == 0:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
