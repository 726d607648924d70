"""Real accelerate: the main process saves, and only the *other* processes call ``wait_for_everyone()``.

Source: huggingface/accelerate issue #2690 ("``wait_for_everyone`` hang the GPUs"): the reporter took the save
block of transformers' examples/pytorch/language-modeling/run_clm_no_trainer.py and wrote
``if accelerator.is_main_process: ... save_pretrained(...) else: accelerator.wait_for_everyone()``; the GPUs
hung after the save while the main process went on computing. Here: a tiny regression model prepared with
``Accelerator(cpu=True)``, 2 epochs, a ``torch.save`` of the unwrapped model after each epoch.

The bug: ``wait_for_everyone()`` is a barrier every process must call; in the ``else`` branch only the
non-main processes reach it, and the main process goes on to the next epoch's gradient all-reduce.
"""

import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("accelerate",)
EPOCHS = 2


def worker():
    from accelerate import Accelerator

    import r4_common

    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(r4_common.toy_dataset(), batch_size=4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    output_dir = r4_common.shared_dir("acc_save_else_wait")
    for epoch in range(EPOCHS):
        model.train()
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            accelerator.backward(loss)  # WAITS
            optimizer.step()
            optimizer.zero_grad()
        if accelerator.is_main_process:
            unwrapped = accelerator.unwrap_model(model)
            torch.save(unwrapped.state_dict(), os.path.join(output_dir, f"epoch_{epoch}.pt"))
        else:  # BUG
            accelerator.wait_for_everyone()  # WAITS
    return loss.item()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
