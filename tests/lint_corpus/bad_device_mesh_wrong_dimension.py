# The same mesh, but the first rank of each shard group reduces over its shard group, which also holds the
# ranks with shard rank 1 to 3: they never make the call.
# Models the PyTorch recipe "Getting Started with DeviceMesh" (pytorch/tutorials
# recipes_source/distributed_device_mesh.rst), written here.
# expect: 14 branch dist.all_reduce
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh


def log_norm(norm):
    mesh_2d = init_device_mesh("cpu", (2, 4), mesh_dim_names=("replicate", "shard"))
    shard_group = mesh_2d.get_group(mesh_dim="shard")
    if mesh_2d.get_local_rank("shard") == 0:
        dist.all_reduce(norm, group=shard_group)
