# The partial and the alias called on every rank, under a test of the step count that every rank shares: local
# SGD's periodic parameter averaging as fairscale's SlowMo data parallel does it
# (fairscale/experimental/nn/data_parallel/gossip/distributed.py: `functools.partial(dist.all_reduce,
# group=...)` applied to every parameter when `should_allreduce_params()`), written here.
# expect: none
import functools

import torch
import torch.distributed as dist

allreduce = dist.all_reduce


def maybe_average(params, step, period, group=None):
    sync = functools.partial(dist.all_reduce, group=group)
    if step % period == 0:
        for p in params:
            p.div_(dist.get_world_size())
            sync(p)
    count = torch.ones(1)
    allreduce(count)
