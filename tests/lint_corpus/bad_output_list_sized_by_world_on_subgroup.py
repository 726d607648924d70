# An output list with one slot per rank of the world, for a collective on a smaller group: torch sizes the
# exchange by the group, so all_gather_object leaves the slots past the group's size as None (a node leader that
# sums every slot then fails) and all_gather fails on the list's length. The helper takes `group=` like
# open_clip's `all_gather_object(args, obj, group=None)` (src/open_clip_train/distributed.py); a direct call on a
# node group from `dist.new_subgroups()` too. Written here.
# expect: 21 size-mismatch dist.all_gather_object
# expect: 31 size-mismatch dist.all_gather
import torch
import torch.distributed as dist


class Args:
    def __init__(self):
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.local_rank = self.rank % 2


def all_gather_object(args, obj, group=None):
    objects = [None for _ in range(args.world_size)]
    dist.all_gather_object(objects, obj, group=group)
    return objects


def node_sums(args, value):
    node_group, _ = dist.new_subgroups()
    counts = all_gather_object(args, {"n": value}, group=node_group)
    total = sum(c["n"] for c in counts) if args.local_rank == 0 else None
    world = dist.get_world_size()
    parts = [torch.zeros(1) for _ in range(world)]
    dist.all_gather(parts, torch.tensor([float(value)]), group=node_group)
    return total, parts
