"""The DDP tutorial's checkpoint demo without its barrier: rank 1 loads before rank 0 has saved.

Source: pytorch/tutorials, intermediate_source/ddp_tutorial.rst (``demo_checkpoint``: rank 0 ``torch.save``s
the model, then ``dist.barrier()`` "to make sure that process 1 loads the model after process 0 saves it", then
every rank ``torch.load``s with ``map_location``). Dropping the barrier (it "only slows things down") makes the
load race the save; rank 0's save is slow here, as on a network filesystem.

The bug: ``torch.load`` on rank 1 with nothing ordering it after rank 0's save; rank 1 fails, rank 0 then waits
for it in DDP's gradient all-reduce.
"""

import os
import tempfile
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from r3_shared import job_dir

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 4


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    ddp_model = DDP(torch.nn.Linear(10, 5))
    checkpoint_path = os.path.join(job_dir("ddp-ckpt"), "model.checkpoint")
    if rank == 0:
        time.sleep(1.0)  # a slow filesystem
        with tempfile.NamedTemporaryFile(dir=os.path.dirname(checkpoint_path), delete=False) as tmp:
            torch.save(ddp_model.state_dict(), tmp)
        os.replace(tmp.name, checkpoint_path)
    ddp_model.load_state_dict(torch.load(checkpoint_path, map_location="cpu"))  # BUG
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.001)
    optimizer.zero_grad()
    loss = ddp_model(torch.randn(20, 10)).pow(2).mean()
    loss.backward()  # WAITS
    optimizer.step()
    return loss.item()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
