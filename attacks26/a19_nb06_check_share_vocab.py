"""Notebook 06's check_share_vocab: wrong answers (right API in the wrong order / on the wrong ranks) must get ✗
with a reason; right answers written differently from the model answer must get ✓."""

import sys

import _h
import torch.distributed as dist

from barrierlab.exercises import nb06
from barrierlab.scenarios.store_handoff import build_vocab


# (a) wrong
def w_src_1(folder):
    objs = [build_vocab()] if dist.get_rank() == 0 else [None]
    dist.broadcast_object_list(objs, src=1)
    return objs[0]


def w_build_after_broadcast(folder):
    objs = [None]
    dist.broadcast_object_list(objs, src=0)
    if dist.get_rank() == 0:
        objs = [build_vocab()]
    return objs[0]


def w_every_rank_builds(folder):
    objs = [build_vocab()]
    dist.broadcast_object_list(objs, src=0)
    return objs[0]


def w_subgroup_without_2_3(folder):
    g = dist.new_group([0, 1])
    objs = [build_vocab()] if dist.get_rank() == 0 else [None]
    if dist.get_rank() in (0, 1):
        dist.broadcast_object_list(objs, src=0, group=g)
    return objs[0]


# (b) right, written differently
def share_from_rank0(obj):
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def r_helper(folder):
    return share_from_rank0(build_vocab() if dist.get_rank() == 0 else None)


def r_placeholder_dict(folder):
    objs = [build_vocab() if dist.get_rank() == 0 else {}]
    dist.broadcast_object_list(objs, src=0)
    return dict(objs[0])


def r_group_of_all_group_src(folder):
    g = dist.new_group(list(range(dist.get_world_size())))
    objs = [build_vocab()] if dist.get_rank() == 0 else [None]
    dist.broadcast_object_list(objs, group=g, group_src=0)
    return objs[0]


def r_two_objects(folder):
    if dist.get_rank() == 0:
        vocab = build_vocab()
        objs = [vocab, len(vocab)]
    else:
        objs = [None, None]
    dist.broadcast_object_list(objs, src=0)
    vocab, size = objs
    assert len(vocab) == size
    return vocab


if __name__ == "__main__":
    cases = [
        (f.__name__, f, f.__name__.startswith("r_"))
        for f in [
            w_src_1,
            w_build_after_broadcast,
            w_every_rank_builds,
            w_subgroup_without_2_3,
            r_helper,
            r_placeholder_dict,
            r_group_of_all_group_src,
            r_two_objects,
        ]
    ]
    sys.exit(_h.check_cases(nb06.check_share_vocab, cases))
