"""firedrakeproject/firedrake issue #4039 / PR #4042 (2025), as fixed: in broadcast mode rank 0's cache hit or
miss decides for every rank.

What the code does: PyOP2's "generate on one rank, broadcast to the others" code cache, in small. Before a parallel
loop runs, every rank looks the kernel's key up in a disk cache shared by the ranks (a directory rank 0 creates and
names to the others). Rank 1 owns the larger partition and reaches the lookup later, after rank 0 has generated the
code and written it to disk -- so rank 1 alone would see a hit. As in the PR (``cache_hit = comm.bcast(cache_hit,
root=0)``), rank 0 broadcasts its own hit or miss first and every rank follows it: on rank 0's miss every rank takes
part in the broadcast of the code; on its hit every rank reads the file. The loop runs twice (a miss, then a hit),
each time running the kernel on the rank's own cells and all-reducing the result.
"""

import datetime
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

CELLS = (40, 120)  # per rank: cells of the mesh partition
SECONDS_PER_CELL = 0.01  # building the local data of a partition


class DiskCache:
    def __init__(self, directory):
        self.directory = directory

    def _path(self, key):
        return os.path.join(self.directory, f"{key}.c")

    def get(self, key):
        try:
            with open(self._path(key)) as f:
                return f.read()
        except FileNotFoundError:
            return None

    def put(self, key, code):
        tmp = self._path(key) + f".tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(code)
        os.replace(tmp, self._path(key))


def generate_code(key):
    return f"void {key}(double *out, const double *x) {{ out[0] += 2.0 * x[0]; }}\n"


def cached_code(key, cache, rank):
    code = cache.get(key)
    decision = [code is not None]
    dist.broadcast_object_list(decision, src=0)  # rank 0's hit or miss decides
    if not decision[0]:
        if rank == 0:
            code = generate_code(key)
            cache.put(key, code)
        box = [code]
        dist.broadcast_object_list(box, src=0)
        code = box[0]
    elif code is None:
        code = cache.get(key)  # rank 0 wrote it before its broadcast of the decision
    return code


def par_loop(key, cache, rank):
    code = cached_code(key, cache, rank)
    assert "out[0] += 2.0" in code
    local = torch.arange(CELLS[rank], dtype=torch.float64).sum() * 2.0  # the kernel on this rank's cells
    total = local.view(1)
    dist.all_reduce(total)
    return total.item()


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp(prefix="r52_pyop2_cache_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    cache = DiskCache(box[0])
    time.sleep(CELLS[rank] * SECONDS_PER_CELL)  # building the partition's local data
    first = par_loop("assemble_mass", cache, rank)
    second = par_loop("assemble_mass", cache, rank)
    assert first == second
    dist.barrier()
    if rank == 0:
        shutil.rmtree(cache.directory, ignore_errors=True)
    print(f"[rank {rank}] assembled {first} twice", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
