"""DTensor on a CPU device mesh: shard a tensor, compute on the shards, gather the full result on every
rank, print it on rank 0.

Source: pytorch/pytorch torch/distributed/tensor/README.md and docs/source/distributed.tensor.md
(``init_device_mesh``, ``distribute_tensor(t, mesh, [Shard(0)])``, ``DTensor.full_tensor()``, which
redistributes to Replicate through functional collectives — an all_gather — and so must run on every rank).
Expected: every rank finishes with the same sum.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    weights = distribute_tensor(torch.arange(8, dtype=torch.float32), mesh, [Shard(0)])
    scaled = weights * 2
    full = scaled.full_tensor()
    if dist.get_rank() == 0:
        print(f"full tensor: {full.tolist()}")
    return full.sum().item()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
