# mmcv/mmengine idiom: `rank, world_size = get_dist_info()` defined in the same file. Only `rank` differs
# between ranks; a condition on `world_size` alone is the same everywhere.
# expect: none
import torch
import torch.distributed as dist


def get_dist_info():
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def reduce_loss(loss):
    rank, world_size = get_dist_info()
    if world_size > 1:
        dist.all_reduce(loss)
        loss /= world_size
    if rank == 0:
        print(f"loss {loss.item():.3f}")
    return loss


def sync():
    if get_dist_info()[1] > 1:
        dist.barrier()
