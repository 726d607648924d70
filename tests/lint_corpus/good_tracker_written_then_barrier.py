# Megatron-LM's save_checkpoint as written: rank 0 writes the tracker file, then every rank meets in a barrier,
# so the file is complete before any rank reads it.
# expect: none
import os

import torch.distributed as dist


def save_checkpoint(iteration, save_dir):
    tracker = os.path.join(save_dir, "latest_checkpointed_iteration.txt")
    if dist.get_rank() == 0:
        with open(tracker, "w") as f:
            f.write(str(iteration))
    dist.barrier()
    with open(tracker) as f:
        return int(f.read())
