"""Stand-in for ``lightning.pytorch``: Trainer, LightningModule, Callback (see lightning/_core.py)."""

from lightning._core import Callback, LightningModule, Trainer, rank_zero_only

__all__ = ["Callback", "LightningModule", "Trainer", "rank_zero_only"]
