"""Helpers shared by the round-5 items: a directory every rank of one run agrees on, a tiny regression data
set built in code, and a Lightning ``Trainer`` on CPU with the gloo DDP strategy."""

import os
import tempfile

import torch
from torch.utils.data import TensorDataset


def shared_dir(tag):
    """A directory named after the run's rendezvous port: the same on every rank of one run, new per run.
    Created by nobody: the items decide who makes it, and when."""
    port = os.environ.get("MASTER_PORT", "0")
    return os.path.join(tempfile.gettempdir(), f"barrierlab_r5_{tag}_{port}")


def toy_dataset(n=16, features=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=generator)
    y = x.sum(dim=1, keepdim=True)
    return TensorDataset(x, y)


def trainer(root, **kwargs):
    """``Trainer(accelerator="cpu", strategy="ddp", devices=N)`` as a user writes it, quiet and small."""
    import lightning.pytorch as pl
    from lightning.pytorch.strategies import DDPStrategy

    import torch.distributed as dist

    options = dict(
        accelerator="cpu",
        strategy=DDPStrategy(process_group_backend="gloo"),
        devices=dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1")),
        max_epochs=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        default_root_dir=root,
    )
    options.update(kwargs)
    return pl.Trainer(**options)
