"""A resume in which every rank scans the checkpoint folder by itself and takes the newest ``step-N`` folder
that carries the commit marker (``.metadata``), written only once every shard is on disk.

Models: pytorch/torchtitan ``CheckpointManager._find_load_step`` (a ``step-N`` folder counts only if
``step-N/.metadata`` exists; torch DCP's coordinator writes ``.metadata`` after the shards); marin-community/marin
PR #8760 (only "complete" candidates are tried); facebookresearch/metaseq issue #53 (a run killed while writing
checkpoints: partial shard files next to complete ones); transformers' per-rank ``rng_state_{rank}.pth`` files.

What it does: 2 ranks resume an interrupted run (a stand-in writes it first: ``step-4`` complete with its
``.metadata``; ``step-6`` with ``model.pt``, rank 0's ``extra-rank0.pt`` and only the first 40 % of
``extra-rank1.pt``, no ``.metadata``). Each rank lists the committed folders, loads its own ``extra-rank{r}.pt``
(its data position) and the model from the newest one; DDP training continues from that step to step 8, and a
final barrier.

Why it is right although no rank tells the others what it found and rank 0's step-6 shard is perfectly readable:
the choice depends only on the marker files, which are the same for every rank; both ranks resume at step 4 and run
4 steps.
"""

import glob
import os
import re
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from _helpers_tmp import remove_tmpdir, shared_tmpdir

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

TOTAL_STEPS = 8
BATCH = 4


def make_model():
    return nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1))


def write_interrupted_run(folder, world_size):
    """Stand-in for the earlier job: full checkpoints at step 4, a torn one at step 6 (no ``.metadata``)."""
    torch.manual_seed(1)
    for step in (4, 6):
        d = os.path.join(folder, f"step-{step}")
        os.makedirs(d)
        torch.save(make_model().state_dict(), os.path.join(d, "model.pt"))
        for r in range(world_size):
            path = os.path.join(d, f"extra-rank{r}.pt")
            torch.save({"step": step, "offset": step * BATCH}, path)
            if step == 6 and r == 1:
                with open(path, "rb+") as f:
                    f.truncate(int(os.path.getsize(path) * 0.4))
        if step == 4:
            open(os.path.join(d, ".metadata"), "w").close()


def committed_steps(folder):
    """Like torchtitan's ``_find_load_step``: a ``step-N`` folder counts only if its ``.metadata`` exists (the
    coordinator writes it after every shard is on disk)."""
    found = []
    for d in glob.glob(os.path.join(folder, "step-*")):
        m = re.fullmatch(r"step-(\d+)", os.path.basename(d))
        if m and os.path.isfile(os.path.join(d, ".metadata")):
            found.append(int(m.group(1)))
    return sorted(found, reverse=True)


def load_latest(folder, rank):
    for step in committed_steps(folder):
        d = os.path.join(folder, f"step-{step}")
        extra = torch.load(os.path.join(d, f"extra-rank{rank}.pt"), weights_only=True)
        return step, torch.load(os.path.join(d, "model.pt"), weights_only=True), extra
    return 0, None, {"step": 0, "offset": 0}


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    folder = shared_tmpdir("r26_resume_")
    try:
        if rank == 0:
            write_interrupted_run(folder, world_size)
        dist.barrier()
        start, model_state, extra = load_latest(folder, rank)
        print(f"[rank {rank}] resuming at step {start}", flush=True)
        model = make_model()
        if model_state is not None:
            model.load_state_dict(model_state)
        model = DDP(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        data = torch.randn(64, 6, generator=torch.Generator().manual_seed(7 + rank))
        offset = extra["offset"]
        for step in range(start, TOTAL_STEPS):
            x = data[offset % 64:offset % 64 + BATCH]
            offset += BATCH
            loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        dist.barrier()
        if rank == 0:
            print(f"finished at step {TOTAL_STEPS}: loss {loss.item():.4f}", flush=True)
    finally:
        if rank == 0:
            remove_tmpdir(folder)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
