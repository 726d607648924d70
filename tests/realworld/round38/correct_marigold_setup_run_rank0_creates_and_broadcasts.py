"""Marigold v2 training: rank 0 alone creates the run directory (still refusing an existing one) and broadcasts
the path -- or its error -- to every rank (correct).

Source: huawei-bayerlab/marigold-v2 issue #6 (part 1) and PR #7 ("Fix run-directory creation during multi-GPU
training"); `marigoldv2/script/train/setup_run.py` `setup_run`, called from `marigoldv2/script/train/train.py`.
The PR's fix: "Allow only rank 0 to create the run directory. Broadcast the chosen path or creation error to every
rank ... Preserve rejection of existing run directories." Every rank then trains with the same run directory.

Stand-ins: rank 1's configuration loading takes 0.3 s longer than rank 0's; the training is a tiny DDP regression
built in code; the `Accelerator` (PR #7 uses `PartialState`) is the process group the harness made, and the
broadcast is `dist.broadcast_object_list`.
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

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


def load_config(rank):
    if rank == 1:
        time.sleep(0.3)  # stand-in: rank 1 loads its configuration more slowly
    return {"job_name": "marigold_depth_v2", "lr": 0.05, "max_iter": 3}


def setup_run(cfg, base_output_dir, is_rank0):
    outcome = [None, None]  # [path, error]
    if is_rank0:
        out_dir_run = os.path.join(base_output_dir, cfg["job_name"])
        try:
            os.makedirs(out_dir_run, exist_ok=False)
            with open(os.path.join(out_dir_run, "config.json"), "w") as f:
                json.dump(cfg, f)
            outcome[0] = out_dir_run
        except OSError as exc:
            outcome[1] = f"{type(exc).__name__}: {exc}"
    dist.broadcast_object_list(outcome, src=0)
    if outcome[1] is not None:
        raise RuntimeError(f"rank 0 could not create the run directory: {outcome[1]}")
    return outcome[0]


def train(cfg, out_dir_run):
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
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
    base = os.path.join(tempfile.gettempdir(), f"r38_marigold_ok_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")
    cfg = load_config(rank)
    out_dir_run = setup_run(cfg, base, is_rank0=(rank == 0))
    loss = train(cfg, out_dir_run)
    print(f"[rank {rank}] trained in {out_dir_run}, last loss {loss:.4f}")
    dist.barrier()
    if rank == 0:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
