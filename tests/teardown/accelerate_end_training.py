"""accelerate's nlp_example shape, in plain torch.distributed: train a DDP model, gather predictions for the
metric, then ``accelerator.end_training()`` (which calls ``destroy_process_group()``) inside the training
function, whose DDP model is freed only when the function returns.

Modelled on huggingface/accelerate examples/nlp_example.py (``training_function``: prepare, train, evaluate
with ``gather_for_metrics``, ``accelerator.end_training()``; ``main`` calls ``training_function``) and on what
accelerate's ``prepare`` (a ``DistributedDataParallel`` wrapper), ``gather_for_metrics`` (an ``all_gather``)
and ``end_training`` (``destroy_process_group``) do on CPU with gloo. Written for the lab; accelerate itself
is not needed.
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def gather_for_metrics(tensor):
    gathered = [torch.zeros_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, tensor)
    return torch.cat(gathered)


def training_function(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(42)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    for _epoch in range(2):
        model.train()
        for _step in range(3):
            batch, labels = torch.randn(8, 16), torch.randint(0, 2, (8,))
            loss = nn.functional.cross_entropy(model(batch), labels)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        model.eval()
        correct = 0
        for _step in range(2):
            batch, labels = torch.randn(8, 16), torch.randint(0, 2, (8,))
            with torch.no_grad():
                predictions = model(batch).argmax(dim=-1)
            predictions, references = gather_for_metrics(predictions), gather_for_metrics(labels)
            correct += int((predictions == references).sum())
    dist.destroy_process_group()  # accelerator.end_training()
    return correct


def main(rank, world_size):
    return training_function(rank, world_size)
