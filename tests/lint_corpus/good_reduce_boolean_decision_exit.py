# A stop decision made on one rank (a file the main process finds), then agreed by a helper of the file that
# all-reduces it and returns the agreed value, before every rank leaves the loop: the helper's result is the same
# on every rank, so the `break` is taken everywhere together. Modelled on Lightning's
# `Strategy.reduce_boolean_decision` (lightning/pytorch/strategies/ddp.py: the decision as a tensor, summed over
# the ranks, compared with the world size) and its use by the EarlyStopping callback, written here.
# expect: none
import os

import torch
import torch.distributed as dist


def reduce_boolean_decision(decision, all_ranks=True):
    flag = torch.tensor(int(decision))
    dist.all_reduce(flag)
    world = dist.get_world_size()
    return bool(flag.item() == world) if all_ranks else bool(flag.item())


def train(model, batches, stop_file):
    for x in batches:
        model(x).sum().backward()
        stop = dist.get_rank() == 0 and os.path.exists(stop_file)
        stop = reduce_boolean_decision(stop, all_ranks=False)
        if stop:
            break
        dist.barrier()
