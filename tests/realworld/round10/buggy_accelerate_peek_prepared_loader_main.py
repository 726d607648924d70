"""A first batch peeked on the main process from a dataloader prepared by accelerate.

Modelled on the training scripts that log one batch before training starts (a grid of input images, the
shapes and a decoded sample, under ``if accelerator.is_main_process:``; diffusers and transformers
``no_trainer`` examples log under the same guard) and on what a prepared dataloader does when an iteration
starts: accelerate's ``DataLoaderShard.__iter__`` calls ``synchronize_rng_states(self.rng_types,
self.synchronized_generator)``, which broadcasts the sampler generator's state from process 0 "at each new
iteration, to ensure any randomization (like shuffling) is done the exact same way across processes"
(accelerate docs, ``concept_guides/internal_mechanism.md``, PR #2008; PR #8; issue #786; PR #2694). Real
accelerate 1.16 on gloo.

Bug: ``next(iter(train_dataloader))`` on the main process starts an iteration there only, so rank 0 makes one
more broadcast than rank 1. The peek's broadcast completes (rank 1's own start-of-iteration broadcast receives
it), so nothing fails there; from then on the ranks are one collective apart: rank 0 waits in the broadcast
that starts its training loop, rank 1 in its first gradient all-reduce, until the 20 s timeout.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20
REQUIRES = ("accelerate",)


def make_loader():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 10, generator=g)
    y = (x[:, :3].sum(1) > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)


def log_first_batch(loader):
    inputs, labels = next(iter(loader))  # BUG
    print(f"first batch: inputs {tuple(inputs.shape)}, labels {labels.tolist()}")


def train(accelerator, model, optimizer, loader):
    model.train()
    for inputs, labels in loader:  # WAITS
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        accelerator.backward(loss)  # WAITS
        optimizer.step()
    return loss.item()


def worker():
    torch.manual_seed(0)
    accelerator = Accelerator(cpu=True)
    model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, make_loader())
    if accelerator.is_main_process:
        log_first_batch(train_dataloader)
    for epoch in range(2):
        loss = train(accelerator, model, optimizer, train_dataloader)  # WAITS
        accelerator.print(f"epoch {epoch}: loss {loss:.4f}")
    accelerator.wait_for_everyone()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
