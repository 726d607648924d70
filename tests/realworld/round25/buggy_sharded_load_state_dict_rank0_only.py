"""A full checkpoint loaded into a flat-sharded (FSDP-style) model under ``if rank == 0``, the DDP idiom, while the
sharded module's load pre-hook all-gathers.

Models: pytorch FSDP1's full-state-dict path, ``_pre_load_state_dict_hook`` / ``_post_load_state_dict_hook``
registered on the module (pytorch/pytorch PRs #73324, #75426, #76912: "make all FSDP state_dict loading logic
done in pre and post hooks"; the pre-hook unshards the flat parameter with an all-gather so the full-size views
can be written, the post-hook reshards); mosaicml/composer PR #2288 review ("I think FSDP would hang because all
ranks have to synchronize" when only rank 0 loads); pytorch/pytorch issue #134095 (a hang in
``set_model_state_dict`` whose stack ends in a load pre-hook); the DDP tutorial's "load on rank 0, DDP
broadcasts" habit, which ``load_state_dict`` itself does not show is collective here.

What it does: 2 ranks build a two-layer model of ``FlatShardedLinear`` modules (each rank keeps half of the
flattened weight and bias; forward all-gathers, backward all-reduces and keeps its half). A short pre-training
run ends with ``model.state_dict()`` on every rank (its hook all-gathers the full tensors) and rank 0 saving the
file. The fine-tuning phase builds a fresh model and loads that checkpoint, then barriers and trains.

The bug: the fine-tuning phase loads under ``if rank == 0:`` ("rank 0 reads the file; the others get the weights
from it"). ``load_state_dict`` runs the module's load pre-hook, whose unshard all-gather rank 0 enters alone;
rank 1 is already in the ``dist.barrier()`` after the load. The two collectives do not match: the job fails
there (gloo timeout), before any fine-tuning step.
"""

import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20


class _Unshard(torch.autograd.Function):
    @staticmethod
    def forward(ctx, shard):
        parts = [torch.empty_like(shard) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, shard.detach())
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad)
        return grad.chunk(dist.get_world_size())[dist.get_rank()] / dist.get_world_size()


class FlatShardedLinear(nn.Module):
    """A Linear whose weight and bias live flattened and sharded across the ranks (FSDP's FlatParameter)."""

    def __init__(self, fin, fout):
        super().__init__()
        full = nn.Linear(fin, fout)
        self.fin, self.fout = fin, fout
        flat = torch.cat([full.weight.detach().reshape(-1), full.bias.detach()])
        self.numel = flat.numel()
        ws = dist.get_world_size()
        padded = F.pad(flat, (0, (-self.numel) % ws))
        self.shard = nn.Parameter(padded.chunk(ws)[dist.get_rank()].clone())
        self._register_state_dict_hook(FlatShardedLinear._full_state_dict_hook)
        self.register_load_state_dict_pre_hook(FlatShardedLinear._pre_load_hook)

    def _full_flat(self):
        parts = [torch.empty_like(self.shard) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, self.shard.detach())  # WAITS
        return torch.cat(parts)[: self.numel]

    def _split(self, flat):
        n = self.fin * self.fout
        return flat[:n].view(self.fout, self.fin), flat[n:]

    @staticmethod
    def _full_state_dict_hook(module, state_dict, prefix, local_metadata):
        # state_dict(): unshard, hand out full-size 'weight' and 'bias' instead of the local shard
        state_dict.pop(prefix + "shard")
        weight, bias = module._split(module._full_flat())
        state_dict[prefix + "weight"] = weight.clone()
        state_dict[prefix + "bias"] = bias.clone()
        return state_dict

    @staticmethod
    def _pre_load_hook(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        # load_state_dict(): unshard so the full-size views exist, write them, keep this rank's part
        flat = module._full_flat()  # WAITS
        weight, bias = module._split(flat)
        weight.copy_(state_dict.pop(prefix + "weight"))
        bias.copy_(state_dict.pop(prefix + "bias"))
        ws = dist.get_world_size()
        state_dict[prefix + "shard"] = F.pad(flat, (0, (-module.numel) % ws)).chunk(ws)[dist.get_rank()].clone()

    def forward(self, x):
        weight, bias = self._split(_Unshard.apply(self.shard)[: self.numel])
        return F.linear(x, weight, bias)


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = FlatShardedLinear(10, 16)
        self.head = FlatShardedLinear(16, 1)

    def forward(self, x):
        return self.head(torch.tanh(self.body(x)))


def train(model, steps, seed):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(seed + dist.get_rank())
    for _ in range(steps):
        x = torch.randn(32, 10, generator=g)
        loss = (model(x) - x[:, :1]).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def pretrain(path):
    torch.manual_seed(0)
    model = Regressor()
    loss = train(model, 3, seed=10)
    state = model.state_dict()  # every rank: the hook all-gathers
    if dist.get_rank() == 0:
        torch.save(state, path)
        print(f"pre-training loss {loss:.4f}, saved {sorted(state)}", flush=True)
    dist.barrier()


def finetune(path):
    torch.manual_seed(1)
    model = Regressor()
    if dist.get_rank() == 0:
        model.load_state_dict(torch.load(path))  # BUG # WAITS
    dist.barrier()  # WAITS
    loss = train(model, 3, seed=20)
    if dist.get_rank() == 0:
        print(f"fine-tuning loss {loss:.4f}", flush=True)


def worker():
    rank = dist.get_rank()
    name = [tempfile.mkdtemp(prefix="r25_shardload_") if rank == 0 else None]
    dist.broadcast_object_list(name, src=0)
    path = os.path.join(name[0], "pretrained.pt")
    try:
        pretrain(path)
        finetune(path)  # WAITS
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(name[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
