"""DDP tutorial's checkpoint demo with the barrier indented into rank 0's branch: the script sets up its
own group (mp.spawn, MASTER_ADDR/PORT); rank 1 loads before rank 0 has saved, or waits alone.

Source: pytorch/tutorials intermediate_source/ddp_tutorial.rst ``demo_checkpoint`` (``if rank == 0:
torch.save(...)`` then ``dist.barrier()`` for every rank, with ``setup``/``cleanup`` and ``mp.spawn``), and
the mistake of huggingface/transformers-bloom-inference PR #40 (a barrier that only rank 0 calls).
Changed for the lab: gloo, a short timeout, a checkpoint file named after the spawning process.
Bug: ``dist.barrier()`` inside ``if rank == 0`` (BUG); rank 0 waits in it (WAITS) while rank 1 does not
wait for the save: it fails to load a file not yet written, or goes on to backward's gradient all_reduce,
which never pairs with rank 0's barrier.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0
#: The script calls init_process_group itself (rank, world_size come from mp.spawn): bl.run cannot run it yet.
SELF_INIT = True


def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timedelta(seconds=TIMEOUT))


def cleanup():
    dist.destroy_process_group()


def main(rank, world_size):
    setup(rank, world_size)
    checkpoint_path = os.path.join(tempfile.gettempdir(), f"ddp-tutorial-{os.getppid()}.checkpoint")
    model = DDP(nn.Linear(10, 5))
    if rank == 0:
        torch.save(model.state_dict(), checkpoint_path)
        dist.barrier()  # BUG  # WAITS
    model.load_state_dict(torch.load(checkpoint_path, map_location="cpu", weights_only=True))
    loss = model(torch.randn(20, 10)).pow(2).mean()
    loss.backward()
    if rank == 0:
        os.remove(checkpoint_path)
    cleanup()
    return rank


if __name__ == "__main__":
    mp.spawn(main, args=(WORLD_SIZE,), nprocs=WORLD_SIZE, join=True)
