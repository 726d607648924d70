"""LayerDrop in an encoder whose layers are sharded with FSDP2, with the "run in sync" guard that knows FSDP.

Source: modelled on huggingface/transformers ``Wav2Vec2Encoder.forward`` / ``HubertEncoder.forward`` (LayerDrop:
``dropout_probability = torch.rand([])``, ``skip_the_layer = self.training and dropout_probability <
self.config.layerdrop``, ``synced_gpus = is_deepspeed_zero3_enabled() or is_fsdp_managed_module(self)``, ``if not
skip_the_layer or synced_gpus:  # under fsdp or deepspeed zero3 all gpus must run in sync``). Per-rank seeds as
accelerate's ``set_seed(seed, device_specific=True)`` gives them. The layers are sharded with torch's FSDP2
``fully_shard``: each layer's forward all-gathers its own parameters.

Correct, though it looks suspicious: every rank draws its own random number per layer (the draws differ across
ranks) and the layer call sits under a condition on that draw; but the condition is ``or synced_gpus``, which is
True for a sharded model on every rank, so every rank runs every layer and makes the same all-gathers (as upstream,
LayerDrop is in effect off while the model is sharded).
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FSDPModule, fully_shard

KIND = "correct"
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


def is_fsdp_managed_module(module):
    # transformers.integrations.fsdp.is_fsdp_managed_module, for FSDP2 modules
    return any(isinstance(m, FSDPModule) for m in module.modules())


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
        synced_gpus = is_deepspeed_zero3_enabled() or is_fsdp_managed_module(self)
        for layer in self.layers:
            dropout_probability = torch.rand([])
            skip_the_layer = self.training and dropout_probability < self.layerdrop
            if not skip_the_layer or synced_gpus:
                # under fsdp or deepspeed zero3 all gpus must run in sync
                hidden_states = layer(hidden_states)
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
        loss = nn.functional.mse_loss(model(data), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
