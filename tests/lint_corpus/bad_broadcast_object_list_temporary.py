# The statistics rank 0 computes are broadcast in a list made in the call, and each rank goes on with its own
# `stats` (None on ranks 1 and up): modelled on pytorch/pytorch issue #56142 ("broadcast_object_list does not
# update the object") and round 16's buggy_stats_broadcast_original_variable. Also a flag broadcast through
# `torch.tensor(flag)`, whose copy receives rank 0's value and is thrown away. Written here.
# expect: 13 discarded-output dist.broadcast_object_list
# expect: 19 discarded-output dist.broadcast
import torch
import torch.distributed as dist


def shared_statistics(compute):
    stats = compute() if dist.get_rank() == 0 else None
    dist.broadcast_object_list([stats], src=0)
    return stats["mean"]


def should_stop(loss):
    flag = float(loss < 0.1)
    dist.broadcast(torch.tensor(flag), src=0)
    return flag > 0
