"""LayerDrop in an encoder whose layers are sharded with FSDP2, the "run in sync" guard keyed on DeepSpeed only.

Source: modelled on huggingface/transformers ``Wav2Vec2Encoder.forward`` / ``HubertEncoder.forward`` (LayerDrop:
``dropout_probability = torch.rand([])``, ``skip_the_layer = self.training and dropout_probability <
self.config.layerdrop``, ``if not skip_the_layer or synced_gpus:  # under fsdp or deepspeed zero3 all gpus must run
in sync``). Older versions of those encoders computed the guard as ``deepspeed_zero3_is_enabled =
is_deepspeed_zero3_enabled()`` only; the newer ones add ``or is_fsdp_managed_module(self)``. Per-rank seeds as
accelerate's ``set_seed(seed, device_specific=True)`` gives them (a different dropout mask on every process). The
layers are sharded with torch's FSDP2 ``fully_shard``: each layer's forward all-gathers its own parameters.

The bug: the guard only knows DeepSpeed (``is_deepspeed_zero3_enabled()`` is False here), so each rank skips the
layers its own random draw tells it to skip. Rank 0 and rank 1 draw different numbers, so one rank all-gathers the
parameters of a layer the other rank skips; the layers have different widths, so the next all-gathers of the two
ranks do not even have the same size, and the ranks never make the same calls again in that step.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FSDPModule, fully_shard

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

HIDDEN = 8
WIDTHS = (16, 24, 32, 40)  # each layer's feed-forward width: its flat parameters differ in size
LAYERDROP = 0.4
STEPS = 3


def set_seed(seed, device_specific=False):
    # as accelerate.utils.set_seed: device_specific adds the process index
    if device_specific:
        seed += dist.get_rank()
    torch.manual_seed(seed)


def is_deepspeed_zero3_enabled():
    return False  # no DeepSpeed here: the model is sharded by FSDP2


class FeedForwardLayer(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN)
        self.up = nn.Linear(HIDDEN, width)
        self.down = nn.Linear(width, HIDDEN)

    def forward(self, hidden_states):
        return hidden_states + self.down(torch.relu(self.up(self.norm(hidden_states))))


class Encoder(nn.Module):
    def __init__(self, layerdrop):
        super().__init__()
        self.layerdrop = layerdrop
        self.layers = nn.ModuleList(FeedForwardLayer(w) for w in WIDTHS)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, hidden_states):
        synced_gpus = is_deepspeed_zero3_enabled()  # BUG
        for layer in self.layers:
            dropout_probability = torch.rand([])
            skip_the_layer = self.training and dropout_probability < self.layerdrop
            if not skip_the_layer or synced_gpus:
                # under deepspeed zero3 all gpus must run in sync
                hidden_states = layer(hidden_states)  # WAITS
        return self.head(hidden_states).mean(dim=1)  # pooled over time


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)  # the same initial weights everywhere
    model = Encoder(LAYERDROP)
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    assert isinstance(model, FSDPModule)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    set_seed(1234, device_specific=True)  # different dropout (and LayerDrop) draws on each process
    data = torch.randn(6, 5, HIDDEN)
    target = torch.randn(6, 1)
    model.train()
    for step in range(STEPS):
        loss = nn.functional.mse_loss(model(data), target)  # WAITS
        loss.backward()  # WAITS
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
