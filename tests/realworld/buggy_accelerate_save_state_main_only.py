"""Accelerate: ``save_state`` called only on the main process; with automatic checkpoint naming it calls
``wait_for_everyone()`` inside, while the other processes are already in the next step's backward.

Source: huggingface/diffusers issue #2606 and huggingface/accelerate issue #1171 (training scripts did
``if accelerator.is_main_process: accelerator.save_state(save_path)`` and hung), and bghira/SimpleTuner
issue #262 ("it can be fixed by calling accelerator.save_state() for all processes"); accelerate's
``Accelerator.save_state`` calls ``self.wait_for_everyone()`` when
``project_configuration.automatic_checkpoint_naming`` is set (src/accelerate/accelerator.py).
Stand-in: tests/realworld/_standins/accelerate.
Bug: ``save_state`` under ``is_main_process`` (BUG); the main process waits in save_state's barrier
(WAITS), the others in the next backward's gradient all_reduce (WAITS).
"""

import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

from accelerate import Accelerator
from accelerate.utils import ProjectConfiguration

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker(checkpointing_steps=2):
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    accelerator = Accelerator(project_config=ProjectConfiguration(box[0], automatic_checkpoint_naming=True))
    model = accelerator.prepare(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    global_step = 0
    for _ in range(4):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        accelerator.backward(loss)  # WAITS
        optimizer.step()
        optimizer.zero_grad()
        global_step += 1
        if global_step % checkpointing_steps == 0:
            if accelerator.is_main_process:  # BUG
                accelerator.save_state()  # WAITS
    return global_step


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
