"""Accelerate: save_state on every process, the unwrapped weights written by the main process only,
metrics gathered on every process.

Source: huggingface/accelerate examples/by_feature/checkpointing.py and docs "Saving and loading training
states": ``accelerator.save_state(output_dir)`` is called by every process (with
``ProjectConfiguration(automatic_checkpoint_naming=True)`` it calls ``wait_for_everyone`` inside);
``accelerator.wait_for_everyone()`` before ``if accelerator.is_main_process:`` saving
``accelerator.unwrap_model(model)``'s weights; ``accelerator.gather_for_metrics`` on every process.
Stand-in: tests/realworld/_standins/accelerate (accelerate is not installed here).
Expected: every rank finishes.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

from accelerate import Accelerator
from accelerate.utils import ProjectConfiguration

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


def worker():
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    project_dir = box[0]
    accelerator = Accelerator(project_config=ProjectConfiguration(project_dir, automatic_checkpoint_naming=True))
    model = accelerator.prepare(torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for _ in range(3):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        accelerator.save_state()
        with torch.no_grad():
            predictions = model(torch.randn(4, 4)).argmax(-1)
        all_predictions = accelerator.gather_for_metrics(predictions)
        accelerator.print(f"epoch {epoch}: {all_predictions.numel()} predictions")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        torch.save(accelerator.unwrap_model(model).state_dict(), os.path.join(project_dir, "final.bin"))
    return all_predictions.numel()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
