"""A resume that tries the newest checkpoint first and, when the rank's own shard of it cannot be read, falls back
to an older one -- on that rank alone.

Models: marin-community/marin PR #8760 (levanter: "tries every complete candidate newest first, so a torn newest
checkpoint falls back to an older one"); facebookresearch/metaseq issue #53 (a run killed while writing
checkpoints: zero-byte and partial ``-shardN.pt`` files next to complete ones); allenai/allennlp issue #2129
("recover from the previous checkpoint instead of the latest one"); transformers' per-rank ``rng_state_{rank}.pth``
files; pytorch/torchtitan ``CheckpointManager._find_load_step`` (``step-N`` folders).

What it does: 2 ranks resume an interrupted run (a stand-in writes it first: ``step-4`` complete; ``step-6`` with
``model.pt`` and rank 0's ``extra-rank0.pt`` but only the first 40 % of ``extra-rank1.pt``, the job having died
while rank 1 wrote it). Each rank walks the ``step-N`` folders newest first and loads its own ``extra-rank{r}.pt``
(its data position); on ``RuntimeError`` / ``EOFError`` it logs a warning and tries the next older folder. Then
DDP training continues from the loaded step to step 8, and a final barrier.

The bug: the fallback is taken per rank. Rank 0 reads its step-6 shard and resumes at step 6; rank 1's is torn, so
it resumes at step 4. DDP's constructor broadcasts rank 0's weights, which hides the difference; rank 0 runs 2
steps and waits in the final barrier while rank 1, on its 3rd step, waits in the gradient all-reduce.
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

KIND = "buggy"
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


def steps_in(folder):
    found = []
    for d in glob.glob(os.path.join(folder, "step-*")):
        m = re.fullmatch(r"step-(\d+)", os.path.basename(d))
        if m:
            found.append(int(m.group(1)))
    return sorted(found, reverse=True)


def load_latest(folder, rank):
    for step in steps_in(folder):
        d = os.path.join(folder, f"step-{step}")
        try:
            extra = torch.load(os.path.join(d, f"extra-rank{rank}.pt"), weights_only=True)
        except (RuntimeError, EOFError) as exc:
            print(f"[rank {rank}] step-{step} unreadable ({type(exc).__name__}); trying an older checkpoint",
                  flush=True)
            continue  # BUG
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
            loss.backward()  # WAITS
            optimizer.step()
        dist.barrier()  # WAITS
        if rank == 0:
            print(f"finished at step {TOTAL_STEPS}: loss {loss.item():.4f}", flush=True)
    finally:
        if rank == 0:
            remove_tmpdir(folder)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
