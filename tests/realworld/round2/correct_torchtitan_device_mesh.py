"""torchtitan: a 2-D device mesh (data parallel x tensor parallel) and its dimensions' process groups; the
first rank of each tensor-parallel slice reports over the data-parallel dimension.

Source: pytorch/torchtitan torchtitan/distributed/parallel_dims.py (``ParallelDims.build_mesh``:
``init_device_mesh(device_type, dims, mesh_dim_names=names)``, ``world_mesh["dp"]``, ``world_mesh["tp"]``)
and torchtitan/components/metrics.py (losses reduced over the data-parallel mesh). On CPU with gloo.
Correct: ``init_device_mesh`` creates every dimension's groups on every rank; tp-local rank 0 is ranks 0
and 2, exactly the data-parallel group [0, 2].
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 3.0


def worker():
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    dp_group, tp_group = mesh["dp"].get_group(), mesh["tp"].get_group()
    tp_rank = mesh["tp"].get_local_rank()
    columns = torch.nn.Linear(4, 2, bias=False)  # this rank's column shard
    losses = []
    for step in range(3):
        x = torch.full((3, 4), float(step + mesh["dp"].get_local_rank()))
        out = columns(x)
        gathered = [torch.empty_like(out) for _ in range(mesh["tp"].size())]
        dist.all_gather(gathered, out.detach(), group=tp_group)
        loss = torch.cat(gathered, dim=1).sum()
        if tp_rank == 0:
            dist.all_reduce(loss, group=dp_group)
            losses.append(loss.item() / mesh["dp"].size())
    dist.barrier()
    return losses


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
