# The barrier is meant to let rank 0 finish downloading, but only rank 0 calls it.
# expect: 14 branch dist.barrier
import torch.distributed as dist
from torchvision import datasets


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def prepare_data(root):
    if is_main_process():
        datasets.MNIST(root, download=True)
        dist.barrier()
    return datasets.MNIST(root, download=False)
