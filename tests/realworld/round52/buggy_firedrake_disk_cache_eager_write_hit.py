"""firedrakeproject/firedrake issue #4039 / PR #4042 (2025): the parallel disk cache of generated kernel code
deadlocked when rank 0 wrote a new entry to disk before a slower rank had looked the key up.

What the code does: PyOP2's "generate on one rank, broadcast to the others" code cache, in small. Before a parallel
loop runs, every rank looks the kernel's key up in a disk cache shared by the ranks (a directory rank 0 creates and
names to the others). On a miss, rank 0 generates the code, writes it to the disk cache straight away and
broadcasts it; the other ranks receive it from the broadcast. On a hit every rank reads the file. The loop then
runs the kernel on the rank's own cells and all-reduces the result.

The bug: hit or miss is decided by each rank's own look at the disk. Rank 1 owns the larger partition and reaches
the lookup later (the issue reproduced with exactly such a load imbalance); by then rank 0 has already written the
entry, so rank 1 registers a hit and goes straight to the loop's all-reduce while rank 0 waits in the broadcast of
the code -- "some ranks will do a broadcast and others will not, ruining MPI synchronisation" (the PR's comment).
The PR's fix (the correct twin): in broadcast mode rank 0's hit or miss decides for every rank
(``cache_hit = comm.bcast(cache_hit, root=0)``).
"""

import datetime
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist

KIND = "buggy"
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
    if code is None:  # BUG
        if rank == 0:
            code = generate_code(key)
            cache.put(key, code)  # written eagerly, before the broadcast
        box = [code]
        dist.broadcast_object_list(box, src=0)  # WAITS
        code = box[0]
    return code


def par_loop(key, cache, rank):
    code = cached_code(key, cache, rank)  # WAITS
    assert "out[0] += 2.0" in code
    local = torch.arange(CELLS[rank], dtype=torch.float64).sum() * 2.0  # the kernel on this rank's cells
    total = local.view(1)
    dist.all_reduce(total)  # WAITS
    return total.item()


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp(prefix="r52_pyop2_cache_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    cache = DiskCache(box[0])
    time.sleep(CELLS[rank] * SECONDS_PER_CELL)  # building the partition's local data
    total = par_loop("assemble_mass", cache, rank)  # WAITS
    dist.barrier()
    if rank == 0:
        shutil.rmtree(cache.directory, ignore_errors=True)
    print(f"[rank {rank}] assembled {total}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
