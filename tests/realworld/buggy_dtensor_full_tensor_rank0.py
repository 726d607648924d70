"""DTensor: ``full_tensor()`` called only on rank 0 to print the result; it all-gathers the shards through
functional collectives, so rank 0 waits for shards the others never send.

Source: pytorch/pytorch torch/distributed/tensor/_api.py (``DTensor.full_tensor`` → ``redistribute`` to
``Replicate`` → ``torch.distributed._functional_collectives.all_gather_tensor``) and the DTensor docs'
warning that redistribution is collective; a printing-on-rank-0 habit applied to a sharded tensor.
Bug: ``full_tensor()`` under ``rank == 0`` (BUG); rank 0 waits in it (WAITS), rank 1 in the final barrier
(WAITS).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    weights = distribute_tensor(torch.arange(8, dtype=torch.float32), mesh, [Shard(0)])
    scaled = weights * 2
    if dist.get_rank() == 0:  # BUG
        print(f"full tensor: {scaled.full_tensor().tolist()}")  # WAITS
    dist.barrier()  # WAITS
    return scaled.to_local().sum().item()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
