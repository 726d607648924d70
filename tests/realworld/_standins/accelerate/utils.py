"""Stand-in for ``accelerate.utils``: only ``ProjectConfiguration`` (see accelerate/__init__.py)."""

from accelerate import ProjectConfiguration

__all__ = ["ProjectConfiguration"]
