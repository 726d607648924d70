# A decorator of the file that makes every call of the function it wraps end in a barrier (MegEngine's
# megengine/distributed/helper.py `synchronized`, "Decorated function will synchronize when finished", used
# around hub.load), applied to a download that only the main rank calls: the barrier in the wrapper is made by
# rank 0 alone, and the other ranks, already past the `if`, meet it in their next collective. Written here.
# expect: 29 hidden-collective fetch_weights -> @synchronized -> dist.barrier
import functools

import torch
import torch.distributed as dist


def synchronized(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        result = func(*args, **kwargs)
        dist.barrier()
        return result

    return wrapper


@synchronized
def fetch_weights(path):
    torch.save(torch.zeros(4), path)


def main(path):
    if dist.get_rank() == 0:
        fetch_weights(path)
    return torch.load(path)
