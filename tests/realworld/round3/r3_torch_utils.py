"""Written after ultralytics/yolov5 utils/torch_utils.py: the local master does a job first, the others wait."""

from contextlib import contextmanager

import torch.distributed as dist


@contextmanager
def torch_distributed_zero_first(local_rank: int):
    if local_rank not in (-1, 0):
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()
