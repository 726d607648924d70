"""The notebooks' exercise checks, one module per notebook (``nb00``, ``nb01``, ...).

A check decides from what a run recorded (the order of events across ranks, values, statuses), never
from the text of the learner's code, and prints ✓ or ✗ with specific feedback (a :class:`Verdict`). ``tests/test_exercises_nbNN.py``
feed each check its solution (✓) and the wrong fixes a learner is likely to try (✗).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    """What a check decided: ``ok`` (also ``passed``), and the ✓/✗ line with what to do, which is also how
    the verdict prints and shows as a cell's value."""

    ok: bool
    message: str

    @property
    def passed(self) -> bool:
        return self.ok

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message

    __repr__ = __str__


class PrintedVerdict(Verdict):
    """A verdict whose check has printed its line already: a cell that ends with it shows nothing more."""

    def _ipython_display_(self) -> None:
        pass


def passed(text: str) -> Verdict:
    return Verdict(True, "✓ " + text)


def not_yet(text: str) -> Verdict:
    return Verdict(False, "✗ not yet: " + text)
