# The twin of bad_output_list_sized_by_world_on_subgroup.py: each list sized by the group the call runs on,
# a helper whose `group=` no caller sets (the world: one slot per rank of the world is right), and a gloo group
# of every rank. Written here.
# expect: none
import torch
import torch.distributed as dist


def all_gather_object(obj, group=None):
    objects = [None for _ in range(dist.get_world_size(group=group))]
    dist.all_gather_object(objects, obj, group=group)
    return objects


def world_gather(obj, group=None):
    objects = [None] * dist.get_world_size()
    dist.all_gather_object(objects, obj, group=group)
    return objects


def node_sums(value):
    node_group, _ = dist.new_subgroups()
    counts = all_gather_object({"n": value}, group=node_group)
    everyone = world_gather({"n": value})
    size = dist.get_world_size(group=node_group)
    parts = [torch.zeros(1) for _ in range(size)]
    dist.all_gather(parts, torch.tensor([float(value)]), group=node_group)
    world = [torch.zeros(1) for _ in range(dist.get_world_size())]
    dist.all_gather(world, torch.tensor([float(value)]), group=dist.group.WORLD)
    cpu_group = dist.new_group(backend="gloo")  # every rank: detectron2's object-gather group
    objects = [None] * dist.get_world_size()
    dist.all_gather_object(objects, value, group=cpu_group)
    return counts, everyone, parts, world, objects
