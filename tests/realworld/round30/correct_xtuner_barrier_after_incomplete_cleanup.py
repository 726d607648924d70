"""xtuner's DCP save with a barrier after rank 0 clears the stale ``.incomplete`` directory.

Models: InternLM/xtuner PR #1852 ("fix distributed barrier imbalance in async_save_dcp"), fix 1: a
``dist.barrier()`` after rank 0's ``rmtree`` + ``mkdir`` of the ``.incomplete`` directory, so no other rank
writes into it while rank 0 is still cleaning up. Code modelled (written here, not copied): the
``async_save_dcp`` flow -- rank 0 removes and re-creates the directory, every rank writes its shard, rank 0 checks
the shards and renames the directory after a barrier.

2 ranks, a stale ``step-2.incomplete`` on disk, rank 0 0.5 s late to the cleanup (staging its optimizer state):
rank 1 waits in the new barrier and writes its shard into the fresh directory.
"""

import datetime
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


def work_dir():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r30_xtuner_{tag}")


def stage_optimizer_state(optimizer):
    time.sleep(0.5)  # stand-in: copying the optimizer state off the device before the write
    return {k: v for k, v in optimizer.state_dict().items()}


def save_dcp(model, optimizer, step):
    rank, world = dist.get_rank(), dist.get_world_size()
    final_dir = os.path.join(work_dir(), f"step-{step}")
    incomplete = final_dir + ".incomplete"
    if rank == 0:
        stage_optimizer_state(optimizer)
        shutil.rmtree(incomplete, ignore_errors=True)
        os.makedirs(incomplete)
    dist.barrier()  # nobody writes before the stale directory is gone
    os.makedirs(incomplete, exist_ok=True)
    params = list(model.state_dict().items())
    shard = dict(params[rank::world])
    torch.save(shard, os.path.join(incomplete, f"shard-{rank}.pt"))
    print(f"[rank {rank}] wrote shard-{rank}", flush=True)
    dist.barrier()
    if rank == 0:
        sizes = {i: os.path.getsize(os.path.join(incomplete, f"shard-{i}.pt")) for i in range(world)}
        os.rename(incomplete, final_dir)
        print(f"committed {final_dir} with shards {sizes}", flush=True)
    dist.barrier()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if rank == 0:
        shutil.rmtree(work_dir(), ignore_errors=True)
        os.makedirs(os.path.join(work_dir(), "step-2.incomplete"))  # left behind by a crashed save
        with open(os.path.join(work_dir(), "step-2.incomplete", "shard-0.pt"), "wb") as f:
            f.write(b"partial")
    dist.barrier()
    for step in (1, 2):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    save_dcp(model, optimizer, step=2)
    if rank == 0:
        print(f"checkpoints: {sorted(os.listdir(work_dir()))}", flush=True)
        shutil.rmtree(work_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
