"""Rank events files made by the real producer, at times a test chooses.

A test that needs an exact timing shape (rank 2 last at every barrier, a span that raised at 0.99 s) describes
each rank's calls and spans; :func:`ranks` writes them with the recorder's own writer (``record._Recorder``,
the entry fields from ``record.call_fields``, ``completed`` for an async call's work) on a clock it sets to
each moment, and reads the files back with the one reader (``events.read_record``). The events a test sees
are therefore what a rank's recorder writes and the collector reads, never hand-built ``Event`` objects.

Likewise torch's flight recorder: a test lists the collectives torch recorded (:class:`Issued`, with the torch
frames that issued them, as a real run lists them: ``tests/test_record_fidelity.py`` checks the frames below
against a DDP run), :func:`rank_record` makes the dict torch's ``_dump_fr_trace`` returns, compacts it with
``record.compact_flight`` and writes it with the recorder's writer, as ``record.dump_flight`` does.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

import torch

from barrierlab import events, record

#: The recorder's start time on the fake clock: the times written are the test's seconds, read back exactly.
T0 = 0.0
#: The wall-clock time (time.time()) at T0: torch's flight recorder stamps entries in wall-clock nanoseconds.
WALL = 1_700_000_000.0


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


#: torch's own frames (path under torch/, function), innermost first, above a collective torch issued itself.
DDP_SHAPE_CHECK = (
    ("distributed/utils.py", "_verify_param_shape_across_processes"),
    ("nn/parallel/distributed.py", "__init__"),
)
DDP_BROADCAST = (
    ("distributed/utils.py", "_sync_params_and_buffers"),
    ("distributed/utils.py", "_sync_module_states"),
    ("nn/parallel/distributed.py", "__init__"),
)
BACKWARD = (
    ("autograd/graph.py", "_engine_run_backward"),
    ("autograd/__init__.py", "backward"),
    ("_tensor.py", "backward"),
)


@dataclass
class Issued:
    """A collective in torch's flight recorder, created at ``start``. With ``by`` empty it is the learner's
    recorded ``torch.distributed`` call (made at ``start``, like the rank's :class:`Call`); otherwise torch
    issued it, from its frames ``by`` (see :data:`BACKWARD`). ``site`` is the learner's line that led there,
    (file, line, func)."""

    op: str
    start: float
    by: tuple = ()
    site: tuple | None = None
    #: torch's sequence number in its group (default: 1, 2, ... in order of ``start``)
    seq: int | None = None
    sizes: list | None = None
    dtypes: list | None = None
    group: str = "0"


def issued(op: str, start: float, **options) -> Issued:
    return Issued(op, start, **options)


def torch_dump(flight: list[Issued]) -> dict:
    """What ``torch._C._distributed_c10d._dump_fr_trace`` unpickles to, for these entries (the fields read)."""
    entries, last = [], {}
    c10d = os.path.join(record._TORCH_DIR, "distributed", "distributed_c10d.py")
    for record_id, item in enumerate(sorted(flight, key=lambda i: i.start)):
        seq = last[item.group] = item.seq if item.seq is not None else last.get(item.group, 0) + 1
        if item.by:
            frames = [(os.path.join(record._TORCH_DIR, path), 1, func) for path, func in item.by]
        else:
            frames = [(c10d, 1, item.op), (record._THIS_FILE, 1, "recorded")]
        if item.site:
            frames.append(tuple(item.site[:3]))
        entries.append(
            {
                "record_id": record_id,
                "process_group": (item.group, "default_pg"),
                "collective_seq_id": seq,
                "p2p_seq_id": 0,
                "is_p2p": False,
                "profiling_name": f"gloo:{item.op}",
                "time_created_ns": round((WALL + item.start - T0) * 1e9),
                "input_sizes": item.sizes,
                "input_dtypes": item.dtypes,
                "output_sizes": item.sizes,
                "state": "completed",
                "frames": [{"filename": f, "line": n, "name": func} for f, n, func in frames],
            }
        )
    return {"entries": entries, "pg_config": {}}


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
        return WALL + (self.now - T0)


class _Work:
    """What an ``async_op=True`` call returns, as far as the recorder looks at it: a Work with a future."""

    def __init__(self) -> None:
        self.future = torch.futures.Future()

    def get_future(self):
        return self.future


def write(path: str, rank: int, items: list[Call | Span], flight: list[Issued] | None = None) -> None:
    """Write one rank's events file: every entry, exit and completion at its time, in time order, then (if
    given) the flight recorder's entries, as a rank copies them when it ends."""
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
        if flight is not None:
            record.write_flight(writer, record.compact_flight(torch_dump(flight)))
        writer.close()
    finally:
        record.time = saved


def rank_record(rank: int, items: list[Call | Span] = (), flight: list[Issued] | None = None) -> events.Record:
    """One rank's record (events and flight record) as the collector reads it, from a file the recorder's
    writer made."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"rank{rank}.events")
        write(path, rank, list(items), flight)
        return events.read_record(path)


def rank_events(rank: int, items: list[Call | Span]) -> list[events.Event]:
    """One rank's events as the collector reads them, from a file the recorder's writer made."""
    return rank_record(rank, items).events


def ranks(*per_rank: list[Call | Span]) -> list[list[events.Event]]:
    """Each rank's events (rank 0 first), as :func:`rank_events` gives them."""
    return [rank_events(rank, items) for rank, items in enumerate(per_rank)]
