"""The notebooks' exercise checks, one module per notebook (``nb00``, ``nb01``, ...).

A check decides from what a run recorded (the order of events across ranks, values, statuses), never
from the text of the learner's code, and prints ✓ or ✗ with specific feedback (a :class:`Verdict`). ``tests/test_exercises_nbNN.py``
feed each check its solution (✓) and the wrong fixes a learner is likely to try (✗).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def check_arguments(**given) -> None:
    """Refuse a check's bad argument before anything runs, naming it (attack15 a08: ``seeds=[]`` passed with
    "0 of 0 runs", ``save_every=0`` ran the learner's code and blamed it). Known names: a function to run
    (``fn``, ``train``, ``save``), a count of at least 1 (``steps``, ``save_every``, ``epochs``), ``world_size``
    (at least 2: a check compares ranks), ``seed`` (an int or None), ``seeds`` (a non-empty list of ints), ``quiet`` (a bool: attack18 a20)."""
    for name, value in given.items():
        if name in ("fn", "train", "save"):
            if not callable(value):
                raise TypeError(f"{name} must be your function to run on every rank, got {type(value).__name__}")
        elif name in ("steps", "save_every", "epochs", "world_size"):
            least = 2 if name == "world_size" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} must be an int of at least {least}, got {value!r}")
        elif name == "seed":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"seed must be an int or None, got {type(value).__name__}")
        elif name == "quiet":
            if not isinstance(value, bool):
                raise TypeError(f"quiet must be True or False, got {type(value).__name__} {value!r}")
        elif name == "seeds":
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                raise TypeError(f"seeds must be a list of ints, got {type(value).__name__}")
            seeds = list(value)
            if not seeds or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
                raise ValueError(f"seeds must be a non-empty list of ints, got {value!r}")
        else:  # pragma: no cover - a check passing a name this function does not know
            raise AssertionError(f"check_arguments does not know {name!r}")


@dataclass(frozen=True)
class Verdict:
    """What a check decided: ``ok`` (also ``passed``), and the ✓/✗ line with what to do, which is also how
    the verdict prints and shows as a cell's value."""

    ok: bool
    message: str
    #: The run the verdict was decided on (the last one the check made), for a learner who wants to look:
    #: ``v = nb03.check(train)``, then ``print(v.run.ledger())``.
    run: object = field(default=None, repr=False, compare=False)

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


def not_yet(text: str, run=None) -> Verdict:
    return Verdict(False, "✗ not yet: " + text, run)


# --- what the checks ask the ordering model (barrierlab.ordering) -----------------------------------------


def unordered(run, folder: str | None, backend: str = "gloo") -> list:
    """The races (:class:`barrierlab.ordering.Race`) among the run's accesses of files in ``folder`` (or of
    ``folder`` itself; None: wherever the files are): pairs of accesses on two ranks, one changing the file, that
    nothing orders."""
    from barrierlab import ordering

    if folder is None:
        return ordering.races(run, backend)
    root = os.path.realpath(folder)
    return [
        race
        for race in ordering.races(run, backend)
        if _inside(race.first.path, root) and _inside(race.second.path, root)
    ]


def _inside(path: str, root: str) -> bool:
    path = os.path.realpath(path)
    return path == root or path.startswith(root + os.sep)


def accesses(run, folder: str | None, how: str | None = None) -> list:
    """Every recorded access (:class:`barrierlab.ordering.Access`) of a file in ``folder`` (or of the folder;
    None: wherever the file is)."""
    from barrierlab import ordering

    root = os.path.realpath(folder) if folder is not None else None
    return [
        a
        for a in ordering.order(run).accesses()
        if (root is None or _inside(a.path, root)) and (how is None or a.how == how)
    ]


def call_words(event) -> str:
    """A recorded call as the learner's code wrote it: 'barrier', 'store.set', 'work.wait()', 'future.done()'."""
    if event.kind == "store":
        return f"store.{event.name}"
    if event.kind == "wait" and "." in event.name:  # Work.wait, Future.wait, Work.is_completed, Future.done
        owner, _, method = event.name.partition(".")
        return f"{owner.lower()}.{method}()"
    return event.name


def race_words(race) -> str:
    """A race in the words of a check: the pair, and that the order came from timing."""
    return f"{race}. This run's order came from timing, which a slower disk or a busier machine changes"
