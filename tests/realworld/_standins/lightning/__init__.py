"""Stand-in for the ``lightning`` package: ``lightning.pytorch`` and ``lightning.fabric`` (see _core.py)."""
