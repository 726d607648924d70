"""Stand-in for ``lightning.fabric``: Fabric (see lightning/_core.py)."""

from lightning._core import Fabric

__all__ = ["Fabric"]
