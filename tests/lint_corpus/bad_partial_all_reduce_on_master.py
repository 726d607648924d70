# Collectives reached through names that stand for them: a module-level alias (`allreduce = dist.all_reduce`, as
# training utilities of many repositories write) and a `functools.partial` of `dist.all_reduce` bound to a group
# (fairscale's SlowMo data parallel, fairscale/experimental/nn/data_parallel/gossip/distributed.py,
# `communication_op = functools.partial(dist.all_reduce, group=...)`), called on the master rank only: the
# other ranks never make them. Written here.
# expect: 20 branch sync (= dist.all_reduce)
# expect: 22 branch allreduce (= dist.all_reduce)
import functools

import torch
import torch.distributed as dist

allreduce = dist.all_reduce


def average_on_master(params, group=None):
    sync = functools.partial(dist.all_reduce, group=group)
    if dist.get_rank() == 0:
        for p in params:
            sync(p)
        total = torch.ones(1)
        allreduce(total)
