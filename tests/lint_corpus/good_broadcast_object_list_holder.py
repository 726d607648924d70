# The twin of bad_broadcast_object_list_temporary.py: the list and the tensor are kept in names and the result is
# read from them (the broadcast_object_list docstring's own example). Written here.
# expect: none
import torch
import torch.distributed as dist


def shared_statistics(compute):
    holder = [compute() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]["mean"]


def should_stop(loss):
    flag = torch.tensor(float(loss < 0.1))
    dist.broadcast(flag, src=0)
    return flag.item() > 0
