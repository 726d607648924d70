"""Rank 0 signals "features ready" with a flag file on both paths: after extracting and on a cache hit.

Models: the file-based "done" hand-off that long preprocessing uses instead of a barrier, so that the collective
timeout cannot fire while rank 0 works (rank 0 writes the output and then an empty marker file, the others poll for
it: e.g. the ``DistributedSync`` helper "Distributed synchronization with plain files", ``chainermn`` jobs that
``open(..., 'process_could_complete')``, Megatron-LM's and NeMo's index builders); the cache-hit shortcut of
``datasets.Dataset.map(load_from_cache_file=True)``. The script is a learner's DDP script whose rank 0 extracts
features into a run directory that survives restarts (here a fresh ``tempfile.mkdtemp``, broadcast) and removes the
marker at the end of every run.

What it does: 2 ranks. A stand-in for the previous (preempted) attempt of the job leaves ``features.pt`` in the run
directory. Rank 0 calls ``prepare_features`` (cache hit); the other rank polls for ``features.done`` every 0.1 s,
then loads the features; 3 epochs of DDP training, a barrier, and rank 0 removes the marker.

Why it is correct: ``prepare_features`` writes the marker whether it extracted or reused the cached file, and only
after ``features.pt`` is complete, so the waiting rank always leaves its poll and reads a finished file.
"""
import datetime
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


def extract_features():
    """Stand-in for the long feature extraction (a frozen encoder over the raw data)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 12, generator=g)
    return {"x": x, "y": (x[:, :3].sum(1) > 0).long()}


def previous_attempt_left_features(run_dir):
    """Stand-in for the preempted attempt of this job: its features are on disk, its marker was cleaned up."""
    torch.save(extract_features(), os.path.join(run_dir, "features.pt"))


def prepare_features(run_dir):
    path = os.path.join(run_dir, "features.pt")
    if os.path.exists(path):
        print(f"reusing cached features {path}", flush=True)
    else:
        torch.save(extract_features(), path)
    open(os.path.join(run_dir, "features.done"), "w").close()  # on both paths: the others are waiting for it


def wait_for_features(run_dir, poll=0.1):
    marker = os.path.join(run_dir, "features.done")
    while not os.path.exists(marker):
        time.sleep(poll)


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    holder = [tempfile.mkdtemp(prefix="r17_run_") if rank == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    run_dir = holder[0]
    try:
        if rank == 0:
            previous_attempt_left_features(run_dir)
            prepare_features(run_dir)
        else:
            wait_for_features(run_dir)
        feats = torch.load(os.path.join(run_dir, "features.pt"))
        x, y = feats["x"][rank::world], feats["y"][rank::world]

        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 2)))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for epoch in range(3):
            for i in range(0, len(x), 8):
                loss = F.cross_entropy(model(x[i:i + 8]), y[i:i + 8])
                opt.zero_grad()
                loss.backward()
                opt.step()
            if rank == 0:
                print(f"epoch {epoch}: loss {loss.item():.3f}", flush=True)
        dist.barrier()
        if rank == 0:
            os.remove(os.path.join(run_dir, "features.done"))  # the next run waits for fresh features
    finally:
        if rank == 0:
            shutil.rmtree(run_dir, ignore_errors=True)  # (a real run directory would stay)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
