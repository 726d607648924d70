"""``accelerator.end_training()`` called on the main process only, before the final ``wait_for_everyone()``.

Modelled on the transformers ``examples/pytorch/*_no_trainer.py`` scripts (e.g. ``run_glue_no_trainer.py``: at
the end ``if args.with_tracking: accelerator.end_training()``, then ``accelerator.wait_for_everyone()`` and the
main process's ``save_pretrained``; transformers issue #37434, "example with no trainer use
accelerator.end_training() in a wrong way") and on huggingface/accelerate PR #3012 ("destroy process group in
``end_training``": since then ``end_training`` finishes the trackers *and* calls
``torch.distributed.destroy_process_group()``; "Note that this function needs to be called on all process");
transformers issue #48874 ("it destroys the group and anything collective afterwards fails"). Real accelerate
1.16 (``Accelerator``, ``prepare``, ``backward``, ``wait_for_everyone``, ``end_training``).

The script finishes its trackers on the main process only (``end_training``'s docstring still speaks of
"stopping trackers on the main process only"), under ``if accelerator.is_main_process``. That call destroys
rank 0's default process group; rank 0's own ``wait_for_everyone()`` then raises ("Default process group has
not been initialized"), and rank 1, in the barrier of the same ``wait_for_everyone()``, loses its peer.
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

KIND = "buggy"
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

    if WITH_TRACKING and accelerator.is_main_process:
        accelerator.end_training()  # BUG
    accelerator.wait_for_everyone()  # WAITS
    if accelerator.is_main_process:
        os.makedirs(output_dir(), exist_ok=True)
        torch.save(accelerator.unwrap_model(model).state_dict(), os.path.join(output_dir(), "model.pt"))
        shutil.rmtree(output_dir(), ignore_errors=True)
    print(f"rank {accelerator.process_index}: done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    if dist.is_initialized():
        dist.destroy_process_group()
