"""Stand-in for mmengine: only ``mmengine.dist`` is provided (see mmengine/dist/__init__.py)."""
