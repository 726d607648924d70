"""Stand-in for detectron2's ``detectron2/utils/comm.py``.

Mirrors facebookresearch/detectron2 ``detectron2/utils/comm.py``: ``synchronize()`` is a
``dist.barrier()`` when the world has more than one process; ``all_gather``/``gather`` move picklable
objects with ``all_gather_object``/``gather_object`` (``gather`` returns ``[]`` on non-destination ranks).
"""

from __future__ import annotations

import torch.distributed as dist


def get_world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def get_rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def is_main_process() -> bool:
    return get_rank() == 0


def synchronize() -> None:
    if get_world_size() == 1:
        return
    dist.barrier()


def all_gather(data) -> list:
    if get_world_size() == 1:
        return [data]
    output = [None] * get_world_size()
    dist.all_gather_object(output, data)
    return output


def gather(data, dst: int = 0) -> list:
    if get_world_size() == 1:
        return [data]
    if get_rank() == dst:
        output = [None] * get_world_size()
        dist.gather_object(data, output, dst=dst)
        return output
    dist.gather_object(data, None, dst=dst)
    return []
