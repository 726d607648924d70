"""Helpers written after NVlabs/imaginaire imaginaire/utils/distributed.py (``get_rank`` that falls back to 0,
``master_only`` that calls the function on rank 0 and returns None elsewhere), imported by
bad_imported_master_only_method.py and good_imported_timing_decorator.py."""

import functools
import time

import torch.distributed as dist


def get_rank():
    rank = 0
    if dist.is_available() and dist.is_initialized():
        rank = dist.get_rank()
    return rank


def master_only(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if get_rank() == 0:
            return func(*args, **kwargs)
        else:
            return None

    return wrapper


def timed(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        result = func(*args, **kwargs)
        print(f"{func.__name__}: {time.perf_counter() - start:.3f} s")
        return result

    return wrapper
