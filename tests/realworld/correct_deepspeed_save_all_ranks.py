"""DeepSpeed: every rank calls ``engine.save_checkpoint``; only the logging is on rank 0.

Source: deepspeedai/DeepSpeed PR #801 ("[save_checkpoint] document the requirement to call for all ranks",
after issue #797) and docs/_tutorials/getting-started.md ("all processes must call this method and not just
the process with rank 0"); the save sits in the training loop as in the tutorial's example
(``if step % args.save_interval: ckpt_id = loss.item(); model_engine.save_checkpoint(args.save_dir, ckpt_id)``).
Stand-in: tests/realworld/_standins/deepspeed (its save_checkpoint has barriers and tag all_reduces).
Expected: every rank finishes.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

import deepspeed

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    save_dir = box[0]
    net = torch.nn.Linear(6, 1)
    model_engine, optimizer, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters(),
                                                         config={"optimizer": {"params": {"lr": 0.01}}})
    for step in range(4):
        loss = model_engine(torch.randn(4, 6)).pow(2).mean()
        model_engine.backward(loss)
        model_engine.step()
        if step % 2 == 1:
            model_engine.save_checkpoint(save_dir, tag=f"step{step}")
            if model_engine.global_rank == 0:
                print(f"saved step{step} to {save_dir}")
    return sorted(os.listdir(save_dir))


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
