# A hand-written main_process_first: every rank calls exactly one barrier,
# rank 0 after the body, the others before it.
# expect: none
from contextlib import contextmanager

import torch.distributed as dist


@contextmanager
def main_process_first():
    rank = dist.get_rank()
    if rank != 0:
        dist.barrier()
    try:
        yield
    finally:
        if rank == 0:
            dist.barrier()


@contextmanager
def main_process_first_flag(is_main):
    if not is_main:
        dist.barrier()
    yield
    if is_main:
        dist.barrier()


def prepare(download):
    with main_process_first():
        download()
