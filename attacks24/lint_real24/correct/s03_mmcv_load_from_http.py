# Reduced from open-mmlab/mmcv mmcv/runner/checkpoint.py load_from_http (the same code is in mmengine's
# runner/checkpoint.py): rank 0 downloads the checkpoint into the cache first, the others wait at a barrier and
# then read it from the cache. Kept whole except the docstring.
import torch.distributed as dist
from torch.utils.model_zoo import load_url


def get_dist_info():
    if dist.is_available() and dist.is_initialized():
        rank = dist.get_rank()
        world_size = dist.get_world_size()
    else:
        rank = 0
        world_size = 1
    return rank, world_size


def load_from_http(filename, map_location=None, model_dir=None):
    rank, world_size = get_dist_info()
    if rank == 0:
        checkpoint = load_url(filename, model_dir=model_dir, map_location=map_location)
    if world_size > 1:
        dist.barrier()
        if rank > 0:
            checkpoint = load_url(filename, model_dir=model_dir, map_location=map_location)
    return checkpoint
