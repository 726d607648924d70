"""Real accelerate: ``wait_for_everyone()`` on every process, then an ``is_main_process``-gated save.

Source: huggingface/transformers, examples/pytorch/language-modeling/run_clm_no_trainer.py (end of training:
``accelerator.wait_for_everyone()``, ``unwrapped_model = accelerator.unwrap_model(model)``, the save with
``is_main_process=accelerator.is_main_process``), the code huggingface/accelerate issue #2690 started from
before moving the wait into an ``else`` branch; and the accelerate documentation's checkpointing guidance
(wait, then save on the main process, then wait before anyone reads the file). Every process calls each
``wait_for_everyone()``; only the file write is gated.
"""

import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

KIND = "correct"
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
    output_dir = r4_common.shared_dir("acc_save_between_waits")
    for epoch in range(EPOCHS):
        model.train()
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            unwrapped = accelerator.unwrap_model(model)
            torch.save(unwrapped.state_dict(), os.path.join(output_dir, f"epoch_{epoch}.pt"))
        accelerator.wait_for_everyone()
    state = torch.load(os.path.join(output_dir, f"epoch_{EPOCHS - 1}.pt"))
    assert torch.equal(state["weight"], accelerator.unwrap_model(model).weight.detach())
    return loss.item()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
