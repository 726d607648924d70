"""A file-system barrier (marker files polled with ``os.path.isfile``) whose marker directory rank 0 removes only
after a process-group barrier at the end, when every rank has left the file barrier.

Models: isaac-sim/IsaacLab-Arena's ``file_barrier`` ("Distributed sync without NCCL (file-based) so Isaac Sim GPU
usage does not hang collectives": each rank writes ``rank_{i}`` into a shared directory under ``TMPDIR`` and polls
until all ``world_size`` markers exist, with a ``timeout_sec``), the variant whose rank 0 cleans the markers up,
and tensorflow/models PR #5271 (marker-file races).

What it does: 2 ranks run their evaluation episodes (a stand-in sleep inside the "simulator": rank 0's take 1.0 s,
rank 1's none), meet in ``file_barrier`` (poll every 0.5 s, give up after 8 s), all-reduce their success counts
on gloo, print the success rate, and meet once more in ``dist.barrier()``, after which rank 0 removes the
marker directory.

Looks suspicious but is right: polling loops on a shared directory with a time-out, ranks arriving 1 s apart, and
an ``rmtree`` of that directory on rank 0 alone. The removal comes after a barrier that every rank reaches only
after leaving the polling loop, so no rank can still be looking for the markers.
"""

import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

POLL_S = 0.5
BARRIER_TIMEOUT_S = 8.0


def barrier_dir(name):
    run_id = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r28_{name}_{run_id}")


def file_barrier(rank, world_size, name):
    d = barrier_dir(name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, f"rank_{rank}"), "w").close()
    start = time.monotonic()
    while True:
        seen = sum(os.path.isfile(os.path.join(d, f"rank_{i}")) for i in range(world_size))
        if seen >= world_size:
            break
        if time.monotonic() - start > BARRIER_TIMEOUT_S:
            raise TimeoutError(f"file_barrier {name!r} timed out (rank {rank}, saw {seen}/{world_size})")
        time.sleep(POLL_S)


def run_episodes(rank, n=4):
    g = torch.Generator().manual_seed(5 + rank)
    if rank == 0:
        time.sleep(1.0)  # stand-in: rank 0's episodes are longer in the simulator
    return int((torch.rand(n, generator=g) > 0.3).sum())


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    successes = run_episodes(rank)
    file_barrier(rank, world_size, "episodes_done")
    t = torch.tensor([float(successes), 4.0])
    dist.all_reduce(t)
    if rank == 0:
        print(f"success rate {t[0].item() / t[1].item():.2f}", flush=True)
    dist.barrier()  # every rank has left file_barrier (it reached the all-reduce): the markers can go
    if rank == 0:
        shutil.rmtree(barrier_dir("episodes_done"), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
