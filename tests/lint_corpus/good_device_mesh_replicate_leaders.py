# A 2-D device mesh for HSDP (replicate x shard): the first rank of each shard group reduces a statistic over
# its replicate group, which holds exactly the ranks with shard rank 0 (init_device_mesh lays the ranks out
# row-major: replicate groups are the columns, shard groups the rows).
# Models the PyTorch recipe "Getting Started with DeviceMesh" (pytorch/tutorials
# recipes_source/distributed_device_mesh.rst: init_device_mesh("cuda", (2, 4), mesh_dim_names=("replicate",
# "shard")), mesh_2d.get_group(mesh_dim="replicate")), written here.
# expect: none
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh


def log_norm(norm):
    mesh_2d = init_device_mesh("cpu", (2, 4), mesh_dim_names=("replicate", "shard"))
    replicate_group = mesh_2d.get_group(mesh_dim="replicate")
    if mesh_2d.get_local_rank("shard") == 0:
        dist.all_reduce(norm, group=replicate_group)
    if mesh_2d["replicate"].get_local_rank() == 0:
        dist.all_reduce(norm, group=mesh_2d["shard"].get_group())
