"""GPTQModel, fixed: the JIT build cache shared on the host is guarded by an fcntl.flock that the kernel releases
when its holder dies; a lock file left by a killed build is removed once the flock is held, and the wait is
bounded.

Source: ModelCloud/GPTQModel issue #3015 (2026) and PR #3019 ("fix(cpp): add cross-process file lock for JIT
kernel builds"): `_cross_process_build_lock` (fcntl.flock, lock file outside the build dir), removal of the stale
torch lock file after acquiring, and a bounded wait (`GPTQMODEL_TORCH_OPS_LOCK_TIMEOUT`) that falls back to the
non-JIT path. Modelled: `TorchOpsJitExtension.load()` called from each rank's pack stage, then an all-reduce of
the packed checksums. The other job killed mid-build still leaves torch's lock file behind.
"""

import datetime
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

EXT_NAME = "gptqmodel_pack_block_cpu"


def killed_build(build_dir):
    """The other job: takes the build lock (O_CREAT | O_EXCL, as FileBaton.try_acquire), starts writing the
    object file, and is killed (OOM killer / Ctrl-C) before it can release the lock."""
    code = (
        "import os, signal, sys\n"
        "d = sys.argv[1]\n"
        "os.close(os.open(os.path.join(d, 'lock'), os.O_CREAT | os.O_EXCL))\n"
        "open(os.path.join(d, 'pack_block.o.partial'), 'wb').write(b'\\x7fELF' + b'\\0' * 64)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", code, build_dir], check=False)


def compile_extension(build_dir):
    """Stand-in for the ninja build: writes the library the loader then imports."""
    with open(os.path.join(build_dir, f"{EXT_NAME}.so"), "w") as f:
        f.write("pack_scale=0.5\n")


def import_extension(build_dir):
    with open(os.path.join(build_dir, f"{EXT_NAME}.so")) as f:
        scale = float(f.read().split("=")[1])
    return lambda w: torch.round(w / scale).clamp(-8, 7) * scale


def load_jit_extension(build_dir, timeout_s=10.0):
    """The PR: an fcntl.flock around probe-and-build (the kernel drops it when its holder dies), kept outside
    the build dir; once held, any leftover torch lock file is stale and removed; the wait is bounded, and on
    timeout the loader falls back to the non-JIT path."""
    lock_path = os.path.join(os.path.dirname(build_dir), f".{EXT_NAME}.flock")
    with open(lock_path, "a") as lock_file:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return lambda w: w  # non-JIT fallback
                time.sleep(0.05)
        try:
            stale = os.path.join(build_dir, "lock")
            if os.path.exists(stale):
                os.remove(stale)
            if not os.path.exists(os.path.join(build_dir, f"{EXT_NAME}.so")):
                compile_extension(build_dir)
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
    return import_extension(build_dir)


def pack_layer(rank, build_dir):
    pack = load_jit_extension(build_dir)
    gen = torch.Generator().manual_seed(rank)
    return pack(torch.randn(32, 32, generator=gen))


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp(prefix="torch_extensions_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    cache_root = box[0]
    build_dir = os.path.join(cache_root, EXT_NAME)
    if rank == 0:
        os.makedirs(build_dir)
        killed_build(build_dir)
    dist.barrier()
    try:
        packed = pack_layer(rank, build_dir)
        checksum = packed.sum().reshape(1)
        dist.all_reduce(checksum)
        print(f"rank {rank}: layer packed, packed checksum over ranks {checksum.item():.2f}", flush=True)
    finally:
        if rank == 0:
            shutil.rmtree(cache_root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
