# The DDP tutorial's line, kept on a CPU machine with gloo.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = torch.nn.Linear(10, 5)
    ddp_model = DDP(model, device_ids=[local_rank])
    ddp_model(torch.randn(2, 10)).sum().backward()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
