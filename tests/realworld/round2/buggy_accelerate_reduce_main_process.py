"""accelerate: the epoch's mean loss reduced with ``accelerator.reduce`` inside the
``if accelerator.is_main_process:`` block that logs it, then ``wait_for_everyone()``.

Source: huggingface/accelerate src/accelerate/accelerator.py (``reduce``: "Reduce the values in *tensor*
across all processes" — an all_reduce; ``wait_for_everyone``: a barrier) and docs/source/basic_tutorials/
troubleshooting.md ("Hanging code and timeout errors": a collective called only on some processes, e.g. under
``is_main_process``); examples/by_feature/tracking.py logs on the main process. Needs the real accelerate
(REQUIRES).
Bug: only the main process calls ``accelerator.reduce`` (BUG, WAITS); the other process waits in
``wait_for_everyone()`` (WAITS): an all_reduce against a barrier.
"""

import torch
from torch.utils.data import DataLoader, TensorDataset

from accelerate import Accelerator

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0
REQUIRES = ("accelerate",)


def worker():
    accelerator = Accelerator(cpu=True)
    data = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, data = accelerator.prepare(model, optimizer, data)
    total = torch.zeros(())
    for x, y in data:
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        total += loss.detach()
    if accelerator.is_main_process:
        mean_loss = accelerator.reduce(total, reduction="mean")  # BUG WAITS
        accelerator.print(f"train loss {mean_loss.item():.4f}")
    accelerator.wait_for_everyone()  # WAITS
    return total.item()


if __name__ == "__main__":
    worker()
