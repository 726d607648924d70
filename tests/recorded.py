"""Rank events files made by the real producer, at times a test chooses.

A test that needs an exact timing shape (rank 2 last at every barrier, a span that raised at 0.99 s) describes
each rank's calls and spans; :func:`ranks` writes them with the recorder's own writer (``record._Recorder``,
the entry fields from ``record.call_fields``, ``completed`` for an async call's work) on a clock it sets to
each moment, and reads the files back with the one reader (``events.read_record``). The events a test sees
are therefore what a rank's recorder writes and the collector reads, never hand-built ``Event`` objects.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field

import torch

from barrierlab import events, record

#: The recorder's start time on the fake clock: the times written are the test's seconds, read back exactly.
T0 = 0.0


@dataclass
class Call:
    """A torch.distributed call a rank made: entered at ``start``, left at ``end`` (None: never left)."""

    op: str
    start: float
    end: float | None
    kind: str = "collective"
    error: BaseException | None = None
    #: the tensors it was given (their shapes and dtypes are recorded)
    tensors: tuple = ()
    #: async_op=True: the call returned at ``end``; its work completed at ``done``
    done: float | None = None
    #: (file, line, func) or (file, line, func, [callers]) as ``record.call_site`` gives it
    site: tuple | None = None
    #: keyword arguments the call was given, recorded as the recorder records them from torch's own signature
    #: (``timeout=``, ``object_list=``, ``src=``, ...)
    kwargs: dict = field(default_factory=dict)


@dataclass
class Span:
    """A ``barrierlab.span(name, kind)`` from ``start`` to ``end`` (None: never left)."""

    name: str
    start: float
    end: float | None
    kind: str = "compute"
    error: BaseException | None = None
    site: tuple | None = field(default=None)


def call(op: str, start: float, end: float | None, **options) -> Call:
    return Call(op, start, end, **options)


def span(kind: str, name: str, start: float, end: float | None, **options) -> Span:
    return Span(name, start, end, kind=kind, **options)


class _Clock:
    """What ``record`` reads as its ``time`` module while a test writes: a monotonic clock the test sets."""

    def __init__(self) -> None:
        self.now = T0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return time.time()


class _Work:
    """What an ``async_op=True`` call returns, as far as the recorder looks at it: a Work with a future."""

    def __init__(self) -> None:
        self.future = torch.futures.Future()

    def get_future(self):
        return self.future


def write(path: str, rank: int, items: list[Call | Span]) -> None:
    """Write one rank's events file: every entry, exit and completion at its time, in time order."""
    clock = _Clock()
    saved = record.time
    record.time = clock
    try:
        writer = record._Recorder(path, rank, T0)
        moments = []  # (time, order, action): at the same time exits come first, then entries, then instants
        for i, item in enumerate(items):
            moments.append((item.start, 1, i, "enter"))
            if item.end is not None:
                moments.append((item.end, 0 if item.end > item.start else 2, i, "leave"))
            if isinstance(item, Call) and item.done is not None:
                moments.append((item.done, 3, i, "done"))
        ids: dict[int, int] = {}
        works: dict[int, _Work] = {}
        for t, _, i, action in sorted(moments):
            clock.now = T0 + t
            item = items[i]
            if action == "enter" and isinstance(item, Span):
                ids[i] = writer.enter(item.kind, item.name, False, item.site)
            elif action == "enter":
                kwargs = dict(item.kwargs, **({"async_op": True} if item.done is not None else {}))
                original = getattr(torch.distributed, item.op, None)
                positions = record._positions(original, item.op) if item.kwargs and original else ()
                extra = record.call_fields(positions, item.tensors, kwargs)
                ids[i] = writer.enter(item.kind, item.op, item.kind == "collective", item.site, extra)
            elif action == "leave":
                writer.leave(ids[i], item.error)
                if isinstance(item, Call) and item.done is not None:
                    works[i] = _Work()
                    works[i].future.add_done_callback(
                        lambda future, event_id=ids[i]: writer.completed(event_id, future)
                    )
            else:
                works[i].future.set_result(None)
        writer.close()
    finally:
        record.time = saved


def rank_events(rank: int, items: list[Call | Span]) -> list[events.Event]:
    """One rank's events as the collector reads them, from a file the recorder's writer made."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"rank{rank}.events")
        write(path, rank, list(items))
        return events.read_record(path).events


def ranks(*per_rank: list[Call | Span]) -> list[list[events.Event]]:
    """Each rank's events (rank 0 first), as :func:`rank_events` gives them."""
    return [rank_events(rank, items) for rank, items in enumerate(per_rank)]
