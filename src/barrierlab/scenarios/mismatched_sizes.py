"""An all_reduce whose tensor is longer on rank 0: the other ranks return wrong data with no error (on gloo, measured: rank 0's last two elements)."""

import torch
import torch.distributed as dist

from barrierlab.scenarios import torchrun_main


def scenario(size_on_rank0=4, size_elsewhere=2):
    rank = dist.get_rank()
    size = size_on_rank0 if rank == 0 else size_elsewhere  # e.g. a metric list one rank grew by mistake
    values = torch.arange(1.0, size + 1) * (rank + 1)  # rank r holds (r + 1) * [1, 2, ...]: rank 0 [1, 2, 3, 4]
    dist.all_reduce(values)  # the sums over 4 ranks would be (1 + 2 + 3 + 4) * [1, 2] = [10, 20]
    return values.tolist()


if __name__ == "__main__":
    torchrun_main(scenario)
