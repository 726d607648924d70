"""``accelerator.end_training()`` called on every process, after the final ``wait_for_everyone()`` and save.

Modelled on the transformers ``examples/pytorch/*_no_trainer.py`` scripts (``run_glue_no_trainer.py``: trackers
finished with ``accelerator.end_training()``, ``wait_for_everyone()``, the main process's save) in the order
transformers issue #37434 asks for (wait, save, then end training), and on huggingface/accelerate PR #3012
(``end_training`` finishes the trackers, each of which already acts on the main process only, and destroys the
process group: "this function needs to be called on all process"). Real accelerate 1.16 (``Accelerator``,
``prepare``, ``backward``, ``wait_for_everyone``, ``end_training``).

Every rank trains, waits, the main process saves, and then every rank calls ``end_training()``, the last
distributed call of the script. What looks suspicious and is right: a teardown that destroys the default
process group inside a library call, under a flag, right after a main-process-only block; the ``__main__``
block that destroys the group only if it is still initialized.
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20
REQUIRES = ("accelerate",)

WITH_TRACKING = True


def output_dir():
    return os.path.join(tempfile.gettempdir(), f"r13_accel_end_{os.environ.get('MASTER_PORT', 'local')}")


def worker():
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    features = torch.randn(32, 6)
    dataset = TensorDataset(features, (features.sum(dim=1) > 0).long())
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loader = DataLoader(dataset, batch_size=4, shuffle=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(2):
        model.train()
        for inputs, labels in loader:
            loss = nn.functional.cross_entropy(model(inputs), labels)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        accelerator.print(f"epoch {epoch}: last loss {loss.item():.4f}")

    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        os.makedirs(output_dir(), exist_ok=True)
        torch.save(accelerator.unwrap_model(model).state_dict(), os.path.join(output_dir(), "model.pt"))
        shutil.rmtree(output_dir(), ignore_errors=True)
    if WITH_TRACKING:
        accelerator.end_training()
    print(f"rank {accelerator.process_index}: done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    if dist.is_initialized():
        dist.destroy_process_group()
