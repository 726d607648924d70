"""A first batch peeked on the main process from the plain dataloader, not from the one accelerate prepared.

Modelled on the training scripts that log one batch before training starts (a grid of input images, the
shapes and a decoded sample, under ``if accelerator.is_main_process:``) and on accelerate's
``DataLoaderShard.__iter__``, which broadcasts the sampler generator's state from process 0 at every new
iteration (``synchronize_rng_states``; accelerate docs ``concept_guides/internal_mechanism.md``, PR #2008, PR
#8, issue #786). Real accelerate 1.16 on gloo.

Correct, though it looks suspicious: a dataloader is iterated under ``if accelerator.is_main_process:`` right
after ``accelerator.prepare``; but it is the original ``torch.utils.data.DataLoader`` (``prepare`` builds a new
``DataLoaderShard`` and leaves it untouched), whose iteration makes no collective, so the ranks' collective
sequences stay the same.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20
REQUIRES = ("accelerate",)


def make_loader():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 10, generator=g)
    y = (x[:, :3].sum(1) > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)


def log_first_batch(loader):
    inputs, labels = next(iter(loader))
    print(f"first batch: inputs {tuple(inputs.shape)}, labels {labels.tolist()}")


def train(accelerator, model, optimizer, loader):
    model.train()
    for inputs, labels in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        accelerator.backward(loss)
        optimizer.step()
    return loss.item()


def worker():
    torch.manual_seed(0)
    accelerator = Accelerator(cpu=True)
    model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    raw_dataloader = make_loader()
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, raw_dataloader)
    if accelerator.is_main_process:
        log_first_batch(raw_dataloader)
    for epoch in range(2):
        loss = train(accelerator, model, optimizer, train_dataloader)
        accelerator.print(f"epoch {epoch}: loss {loss:.4f}")
    accelerator.wait_for_everyone()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
