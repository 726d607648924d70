"""OpenEquivariance: `import openequivariance` JIT-builds its torch extensions on every rank; a first build that
was killed part-way left torch's build `lock` file behind, and every later import spin-waits on it forever.

Source: PASSIONLab/OpenEquivariance issue #207 ("Import-time cpp_extension JIT can hang forever on a stale build
lock (FileBaton spin-wait); please add a timeout or lock-staleness check", 2026-07): openequivariance/extlib/
__init__.py calls `torch.utils.cpp_extension.load("libtorch_tp_jit", ...)` at import; builds serialise on a
`lock` file in the extension build dir via torch's FileBaton, "which spin-waits indefinitely with no timeout. If
a first build is killed part-way (OOM-killer, cgroup pids limit, user Ctrl-C, batch scheduler), the stale `lock`
file remains, and every later `import openequivariance` hangs forever, silently". Observed as the
`enable_OpenEquivariance` path of nequip. Modelled: the import-time `load` (FileBaton `try_acquire`, else
`wait`) on each rank of a DDP training job of an equivariant interatomic potential, before the first gradient
all-reduce.

A first launch's build exceeded the cgroup pids limit and was killed while holding the lock (here: a child
process that takes the lock as FileBaton.try_acquire does, then SIGKILLs itself). The next launch's ranks all
block in FileBaton.wait.

The bug: the import-time build waits on a lock file with no timeout and no check that its holder is alive.
"""

import datetime
import os
import shutil
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.file_baton import FileBaton

KIND = "buggy"
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


def import_openequivariance(build_dir):
    """extlib/__init__.py: torch.utils.cpp_extension.load at import time."""
    baton = FileBaton(os.path.join(build_dir, "lock"))
    if baton.try_acquire():
        try:
            if not os.path.exists(os.path.join(build_dir, f"{EXT_NAME}.so")):
                build_extension(build_dir)
        finally:
            baton.release()
    else:
        baton.wait()  # BUG  # WAITS
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
        irreps = import_openequivariance(build_dir)  # WAITS
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
    worker()  # WAITS
    dist.destroy_process_group()
