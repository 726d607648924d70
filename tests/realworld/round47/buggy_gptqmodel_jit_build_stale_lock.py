"""GPTQModel: the ranks' packing step JIT-loads a torch extension from a build cache shared on the host; torch's
lock file for that cache was left behind by a process killed mid-build, and every later load spins on it
forever.

Source: ModelCloud/GPTQModel issue #3015 ("Concurrent quantize() processes on the same machine can hang
indefinitely (shared pack_block_cpu JIT extension build directory is not process-isolated)", 2026) and PR #3019
("fix(cpp): add cross-process file lock for JIT kernel builds"): "Two quantize() processes on one host share the
same JIT build cache, but the lock guarding it is process-local. torch serializes builds with a lock file that
has no timeout or owner check. If a process is killed mid-build, that file is left behind and every later
load() waits on it forever at 0% cpu." Modelled: `TorchOpsJitExtension.load()` in gptqmodel/utils/cpp.py and
torch.utils.cpp_extension's build serialisation with `torch.utils.file_baton.FileBaton` (`try_acquire`, else
`wait`), called from each rank's pack stage before the ranks all-reduce their packed checksums.

Another quantize() job on the host was killed while it held the build lock (here: a child process that takes
the lock exactly as FileBaton.try_acquire does, then SIGKILLs itself). Both ranks then reach the pack stage:
the lock file exists, so each rank waits in FileBaton.wait, which polls with no timeout and no owner check.

The bug: the build is serialised by a lock file that outlives its holder and is waited on without bound.
"""

import datetime
import os
import shutil
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
from torch.utils.file_baton import FileBaton

KIND = "buggy"
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


def load_jit_extension(build_dir):
    """torch.utils.cpp_extension._jit_compile's serialisation, which TorchOpsJitExtension.load() relied on."""
    baton = FileBaton(os.path.join(build_dir, "lock"))
    if baton.try_acquire():
        try:
            if not os.path.exists(os.path.join(build_dir, f"{EXT_NAME}.so")):
                compile_extension(build_dir)
        finally:
            baton.release()
    else:
        baton.wait()  # BUG  # WAITS
    return import_extension(build_dir)


def pack_layer(rank, build_dir):
    pack = load_jit_extension(build_dir)  # WAITS
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
        packed = pack_layer(rank, build_dir)  # WAITS
        checksum = packed.sum().reshape(1)
        dist.all_reduce(checksum)
        print(f"rank {rank}: layer packed, packed checksum over ranks {checksum.item():.2f}", flush=True)
    finally:
        if rank == 0:
            shutil.rmtree(cache_root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
