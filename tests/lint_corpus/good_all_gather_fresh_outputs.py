# The fix of bad_all_gather_aliased_outputs.py: one tensor per slot. A list of placeholders repeated for an
# object collective is fine: all_gather_object replaces the slots, it does not write into them. Written here.
# expect: none
import torch
import torch.distributed as dist


def gather_predictions(preds):
    world_size = dist.get_world_size()
    gathered = [torch.zeros_like(preds) for _ in range(world_size)]
    dist.all_gather(gathered, preds)
    return torch.cat(gathered)


def gather_names(name):
    names = [None] * dist.get_world_size()
    dist.all_gather_object(names, name)
    return names
