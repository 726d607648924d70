"""A distributed checkpoint saved only on rank 0, as one would do with ``torch.save``.

Source: pytorch/tutorials, recipes_source/distributed_checkpoint_recipe.rst (``dcp.save`` is called by every
rank: each writes its own shards and rank 0 writes the metadata after a gather), and the same slip reported for
DeepSpeed's ``save_checkpoint`` (deepspeedai/DeepSpeed pull request #801: "all processes must call this method
- and I unknowingly called it for rank 0 and was getting a hanging").

The bug: ``dcp.save`` behind ``if rank == 0``; rank 0 waits inside it for rank 1's plan, rank 1 waits in the
barrier after the step.
"""

import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from r3_shared import job_dir

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 4


def worker():
    model = torch.nn.Linear(4, 4)
    folder = os.path.join(job_dir("dcp-rank0"), "step-10")
    if dist.get_rank() == 0:
        dcp.save({"model": model.state_dict()}, checkpoint_id=folder)  # BUG WAITS
    dist.barrier()  # WAITS
    return os.path.exists(folder)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
