# Megatron-LM's save_checkpoint (megatron/training/checkpointing.py) writes the tracker file on rank 0 and then
# calls torch.distributed.barrier(). Without that barrier, every rank reading the tracker back (to log the
# iteration it saved) can read it before rank 0 wrote it: a missing file, or the previous iteration.
# expect: 16 file-race open
import os

import torch.distributed as dist


def save_checkpoint(iteration, save_dir):
    tracker = os.path.join(save_dir, "latest_checkpointed_iteration.txt")
    if dist.get_rank() == 0:
        with open(tracker, "w") as f:
            f.write(str(iteration))
    # the barrier Megatron has here was removed
    with open(tracker) as f:
        saved = int(f.read())
    print(f"rank {dist.get_rank()}: checkpoint at iteration {saved}")
    return saved
