"""OpenEquivariance, fixed: the import-time JIT build takes a lock that records its owner; a rank that finds a
lock whose owner is dead (or older than a timeout) removes it and builds, instead of spin-waiting forever.

Source: PASSIONLab/OpenEquivariance issue #207 (2026-07; closed as a duplicate): "please add a timeout or
lock-staleness check" to the import-time `torch.utils.cpp_extension.load`, whose FileBaton spin-waits
indefinitely on a `lock` left by a build killed part-way. Modelled: extlib/__init__.py's import-time build on
each rank of a DDP job training an equivariant potential. The issue asks for the check rather than giving a
patch; the owner-pid check plus timeout here is that request written out. The first launch's killed build still
leaves its lock file behind.
"""

import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

EXT_NAME = "libtorch_tp_jit"


def first_launch_killed(build_dir):
    """The earlier import: ninja's -j <nproc> swarm hit the cgroup pids limit; the process holding the lock
    was killed before `baton.release()`."""
    code = (
        "import os, signal, sys\n"
        "d = sys.argv[1]\n"
        "os.close(os.open(os.path.join(d, 'lock'), os.O_CREAT | os.O_EXCL))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", code, build_dir], check=False)


def build_extension(build_dir):
    with open(os.path.join(build_dir, f"{EXT_NAME}.so"), "w") as f:
        f.write("irreps=0e+1o\n")


def lock_holder_alive(lock_path):
    try:
        with open(lock_path) as f:
            pid = int(f.read().strip() or 0)
    except (OSError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def import_openequivariance(build_dir, timeout_s=10.0):
    """What the issue asks for: the lock records its owner; a waiter removes a lock whose owner is gone (or that
    outlives the timeout) and takes over the build instead of spinning forever."""
    lock_path = os.path.join(build_dir, "lock")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fd = os.open(lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            if not lock_holder_alive(lock_path) or time.monotonic() > deadline:
                try:
                    os.remove(lock_path)  # stale: its holder was killed mid-build
                except FileNotFoundError:
                    pass
                continue
            time.sleep(0.1)
            continue
        try:
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            if not os.path.exists(os.path.join(build_dir, f"{EXT_NAME}.so")):
                build_extension(build_dir)
        finally:
            os.remove(lock_path)
        break
    with open(os.path.join(build_dir, f"{EXT_NAME}.so")) as f:
        return f.read().strip()


class TensorProductPotential(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 16)
        self.readout = nn.Linear(16, 1)

    def forward(self, features):
        return self.readout(torch.tanh(self.embed(features))).sum()


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp(prefix="torch_extensions_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    cache_root = box[0]
    build_dir = os.path.join(cache_root, EXT_NAME)
    if rank == 0:
        os.makedirs(build_dir)
        first_launch_killed(build_dir)
    dist.barrier()
    try:
        irreps = import_openequivariance(build_dir)
        torch.manual_seed(0)
        model = DDP(TensorProductPotential())
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        gen = torch.Generator().manual_seed(rank)
        for _ in range(3):
            energy = model(torch.randn(12, 4, generator=gen))
            opt.zero_grad()
            (energy - 1.0).pow(2).backward()
            opt.step()
        print(f"rank {rank}: extension {irreps!r} loaded, 3 steps, energy {energy.item():.4f}", flush=True)
    finally:
        dist.barrier()
        if rank == 0:
            shutil.rmtree(cache_root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
