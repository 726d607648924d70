# The same loop with a helper that only looks agreed: it all-reduces a *copy* of the flag for logging and returns
# the rank's own decision, so the main process leaves the loop and the others wait in the next barrier. Modelled
# on Lightning's `Strategy.reduce_boolean_decision` (lightning/pytorch/strategies/ddp.py) with the reduced value
# dropped, written here.
# expect: 24 hidden-collective reduce_boolean_decision -> dist.all_reduce
# expect: 27 early-exit dist.barrier
import os

import torch
import torch.distributed as dist


def reduce_boolean_decision(decision):
    flag = torch.tensor(int(decision))
    dist.all_reduce(flag)
    print("ranks that want to stop:", int(flag.item()))
    return decision


def train(model, batches, stop_file):
    for x in batches:
        model(x).sum().backward()
        stop = dist.get_rank() == 0 and os.path.exists(stop_file)
        stop = reduce_boolean_decision(stop)
        if stop:
            break
        dist.barrier()
