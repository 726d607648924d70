# The same `synchronized` decorator (MegEngine's megengine/distributed/helper.py, around hub.load) used as it is
# meant: every rank calls the wrapped function, which does the download on rank 0 only, so every rank reaches the
# wrapper's barrier and the other ranks read the file after it is written. Written here.
# expect: none
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
    if dist.get_rank() == 0:
        torch.save(torch.zeros(4), path)


def main(path):
    fetch_weights(path)
    return torch.load(path)
