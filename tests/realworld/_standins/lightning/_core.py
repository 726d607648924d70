"""Stand-in for PyTorch Lightning's Trainer, LightningModule, DDP strategy, Fabric and ``rank_zero_only``.

Mirrors Lightning-AI/pytorch-lightning:
- ``src/lightning/pytorch/strategies/ddp.py``: ``DDPStrategy.barrier`` is ``torch.distributed.barrier()``;
  ``broadcast`` uses ``broadcast_object_list``; ``reduce`` all-reduces (mean by default); the model is wrapped
  in DDP, so ``training_step`` runs through DDP's forward and backward all-reduces the gradients.
- ``src/lightning/pytorch/core/module.py``: ``LightningModule.all_gather`` calls the strategy's all_gather.
- ``src/lightning/pytorch/trainer/trainer.py``: ``Trainer.save_checkpoint`` writes on global rank 0 only,
  then calls ``self.strategy.barrier("Trainer.save_checkpoint")`` (the frame in issue #19045's traceback).
- ``src/lightning/fabric/fabric.py``: ``Fabric.barrier``, ``Fabric.setup`` (DDP), ``Fabric.backward``.
- ``src/lightning/fabric/utilities/rank_zero.py``: ``rank_zero_only`` runs the function on rank 0 only.
The training loop keeps only the order of hooks the corpus uses.
"""

from __future__ import annotations

import functools
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def rank_zero_only(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if int(os.environ.get("RANK", 0)) == 0:
            return fn(*args, **kwargs)
        return None

    return wrapped


class DDPStrategy:
    def __init__(self) -> None:
        self.global_rank = dist.get_rank()
        self.world_size = dist.get_world_size()

    def barrier(self, name: str | None = None) -> None:
        dist.barrier()

    def broadcast(self, obj, src: int = 0):
        box = [obj]
        dist.broadcast_object_list(box, src=src)
        return box[0]

    def reduce(self, tensor: torch.Tensor, reduce_op: str = "mean") -> torch.Tensor:
        tensor = tensor.clone()
        dist.all_reduce(tensor)
        return tensor / self.world_size if reduce_op == "mean" else tensor

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        out = [torch.empty_like(tensor) for _ in range(self.world_size)]
        dist.all_gather(out, tensor.contiguous())
        return torch.stack(out)


class _StepWrapper(torch.nn.Module):
    """What Lightning puts inside DDP: its forward runs ``training_step``."""

    def __init__(self, module: "LightningModule") -> None:
        super().__init__()
        self.module = module

    def forward(self, batch, batch_idx):
        return self.module.training_step(batch, batch_idx)


class LightningModule(torch.nn.Module):
    trainer: "Trainer"

    @property
    def global_rank(self) -> int:
        return self.trainer.global_rank

    def all_gather(self, data: torch.Tensor) -> torch.Tensor:
        return self.trainer.strategy.all_gather(data)

    def log(self, name: str, value, sync_dist: bool = False) -> None:
        if sync_dist:
            value = self.trainer.strategy.reduce(torch.as_tensor(value, dtype=torch.float32))
        self.trainer.logged[name] = float(value)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def on_train_epoch_end(self) -> None:
        pass

    def validation_step(self, batch, batch_idx):
        return None

    def on_validation_epoch_end(self) -> None:
        pass


class Callback:
    def on_train_epoch_end(self, trainer: "Trainer", pl_module: LightningModule) -> None:
        pass


class Trainer:
    def __init__(self, max_epochs: int = 1, callbacks: list | None = None) -> None:
        self.strategy = DDPStrategy()
        self.max_epochs = max_epochs
        self.callbacks = list(callbacks or [])
        self.current_epoch = 0
        self.logged: dict[str, float] = {}
        self.lightning_module: LightningModule | None = None

    @property
    def global_rank(self) -> int:
        return self.strategy.global_rank

    @property
    def world_size(self) -> int:
        return self.strategy.world_size

    @property
    def is_global_zero(self) -> bool:
        return self.strategy.global_rank == 0

    def fit(self, model: LightningModule, train_batches: list, val_batches: list | None = None) -> None:
        model.trainer = self
        self.lightning_module = model
        ddp = DistributedDataParallel(_StepWrapper(model))
        optimizer = model.configure_optimizers()
        for epoch in range(self.max_epochs):
            self.current_epoch = epoch
            for i, batch in enumerate(train_batches):
                loss = ddp(batch, i)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            model.on_train_epoch_end()
            for callback in self.callbacks:
                callback.on_train_epoch_end(self, model)
            if val_batches:
                with torch.no_grad():
                    for i, batch in enumerate(val_batches):
                        model.validation_step(batch, i)
                model.on_validation_epoch_end()

    def save_checkpoint(self, filepath: str) -> None:
        if self.is_global_zero:
            torch.save({"state_dict": self.lightning_module.state_dict(), "epoch": self.current_epoch}, filepath)
        self.strategy.barrier("Trainer.save_checkpoint")


class Fabric:
    def __init__(self) -> None:
        self.strategy = DDPStrategy()

    @property
    def global_rank(self) -> int:
        return self.strategy.global_rank

    @property
    def is_global_zero(self) -> bool:
        return self.global_rank == 0

    def barrier(self, name: str | None = None) -> None:
        self.strategy.barrier(name)

    def setup(self, module: torch.nn.Module, optimizer: torch.optim.Optimizer):
        return DistributedDataParallel(module), optimizer

    def backward(self, loss) -> None:
        loss.backward()
