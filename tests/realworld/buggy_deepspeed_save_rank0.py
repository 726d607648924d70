"""DeepSpeed: ``save_checkpoint`` called on rank 0 only; its internal barrier waits for ranks that
went on training.

Source: deepspeedai/DeepSpeed issue #797 / PR #801 ("I unknowingly called it for rank 0 and was getting a
hanging"), issue #2993 (diffusers: "if i judge `rank==0` before save checkpoint, the process will hang"),
and allenai/allennlp PR #4693 (``if self._master: checkpointer.save`` → ``DeepspeedEngine.save_checkpoint``
→ ``dist.barrier()``).
Stand-in: tests/realworld/_standins/deepspeed.
Bug: save under ``global_rank == 0`` (BUG); rank 0 waits in save_checkpoint's barrier (WAITS) while rank 1
waits in the next backward's gradient all_reduce (WAITS).
"""

import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

import deepspeed

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    net = torch.nn.Linear(6, 1)
    model_engine, _, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters())
    for step in range(4):
        loss = model_engine(torch.randn(4, 6)).pow(2).mean()
        model_engine.backward(loss)  # WAITS
        model_engine.step()
        if step == 1 and model_engine.global_rank == 0:  # BUG
            model_engine.save_checkpoint(box[0], tag=f"step{step}")  # WAITS
    return model_engine.global_steps


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
