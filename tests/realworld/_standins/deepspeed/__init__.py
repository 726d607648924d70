"""Stand-in for DeepSpeed's engine (data parallel, no ZeRO partitioning).

Mirrors deepspeedai/DeepSpeed ``deepspeed/__init__.py`` (``initialize`` returns engine, optimizer,
dataloader, scheduler) and ``deepspeed/runtime/engine.py``: ``backward`` all-reduces the gradients;
``save_checkpoint`` makes the folder on rank 0, then ``dist.barrier()``, validates that every rank uses the
same tag (``_checkpoint_tag_validation``: two all_reduces, MAX and MIN, of the tag's hash), writes, and
ends with another ``dist.barrier()``. Its docs say: all processes must call ``save_checkpoint``
(PR #801 after issue #797).
"""

from __future__ import annotations

import hashlib
import os

import torch
import torch.distributed as dist


class DeepSpeedEngine(torch.nn.Module):
    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
        super().__init__()
        self.module = model
        self.optimizer = optimizer
        self.global_rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.global_steps = 0
        for p in self.module.parameters():  # engine init broadcasts the parameters from rank 0
            dist.broadcast(p.data, src=0)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def backward(self, loss) -> None:
        loss.backward()
        for p in self.module.parameters():  # allreduce_gradients
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= self.world_size

    def step(self) -> None:
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.global_steps += 1

    def _checkpoint_tag_validation(self, tag: str) -> None:
        digest = torch.tensor(list(hashlib.sha1(tag.encode()).digest()), dtype=torch.uint8)
        high, low = digest.clone(), digest.clone()
        dist.all_reduce(high, op=dist.ReduceOp.MAX)
        dist.all_reduce(low, op=dist.ReduceOp.MIN)
        if not torch.equal(high, low):
            raise ValueError(f"checkpoint tag {tag!r} differs between ranks")

    def save_checkpoint(self, save_dir: str, tag: str | None = None, client_state: dict | None = None) -> bool:
        if self.global_rank == 0:
            os.makedirs(save_dir, exist_ok=True)
        dist.barrier()
        tag = str(tag if tag is not None else f"global_step{self.global_steps}")
        self._checkpoint_tag_validation(tag)
        os.makedirs(os.path.join(save_dir, tag), exist_ok=True)
        if self.global_rank == 0:
            state = {"module": self.module.state_dict(), **(client_state or {})}
            torch.save(state, os.path.join(save_dir, tag, "mp_rank_00_model_states.pt"))
            with open(os.path.join(save_dir, "latest"), "w") as f:
                f.write(tag)
        dist.barrier()
        return True


def initialize(model: torch.nn.Module, model_parameters=None, config: dict | None = None):
    lr = (config or {}).get("optimizer", {}).get("params", {}).get("lr", 0.01)
    optimizer = torch.optim.SGD(model_parameters if model_parameters is not None else model.parameters(), lr=lr)
    engine = DeepSpeedEngine(model, optimizer)
    return engine, optimizer, None, None
