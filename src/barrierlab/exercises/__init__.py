"""The notebooks' exercise checks, one module per notebook (``nb00``, ``nb01``, ...).

A check decides from what a run recorded (the order of events across ranks, values, statuses), never
from the text of the learner's code, and prints ✓ or ✗ with specific feedback. ``tests/test_exercises.py``
feeds each check its solution (✓) and the wrong fixes a learner is likely to try (✗).
"""
