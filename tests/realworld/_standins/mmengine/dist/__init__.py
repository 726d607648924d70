"""Stand-in for mmengine's ``mmengine.dist``.

Mirrors open-mmlab/mmengine ``mmengine/dist/utils.py`` (``get_dist_info`` returns ``(rank, world_size)``,
``barrier``) and ``mmengine/dist/dist.py`` (``all_reduce`` with ``op='sum'|'mean'``; ``collect_results`` in
its CPU mode: rank 0 makes a temporary folder and broadcasts its name, every rank dumps its part, a
``barrier``, then rank 0 reads the parts back in order and the other ranks return ``None``).
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile

import torch
import torch.distributed as dist


def get_dist_info() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def get_rank() -> int:
    return get_dist_info()[0]


def get_world_size() -> int:
    return get_dist_info()[1]


def is_main_process() -> bool:
    return get_rank() == 0


def barrier() -> None:
    if get_world_size() > 1:
        dist.barrier()


def all_reduce(data: torch.Tensor, op: str = "sum") -> None:
    if get_world_size() == 1:
        return
    dist.all_reduce(data)
    if op == "mean":
        data.div_(get_world_size())


def collect_results(results: list, size: int, device: str = "cpu") -> list | None:
    rank, world_size = get_dist_info()
    if world_size == 1:
        return results[:size]
    box = [tempfile.mkdtemp(prefix="mmengine-") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    tmpdir = box[0]
    with open(os.path.join(tmpdir, f"part_{rank}.pkl"), "wb") as f:
        pickle.dump(results, f)
    barrier()
    if rank != 0:
        return None
    parts = []
    for i in range(world_size):
        with open(os.path.join(tmpdir, f"part_{i}.pkl"), "rb") as f:
            parts.append(pickle.load(f))
    shutil.rmtree(tmpdir)
    ordered = [item for group in zip(*parts) for item in group]
    return ordered[:size]
