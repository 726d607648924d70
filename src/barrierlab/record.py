"""Per-rank recording of collective calls and learner-defined spans.

Inside a rank started by :func:`barrierlab.run` recording is on by default.  Under ``torchrun`` or any
other launcher it is on when ``BARRIERLAB_RECORD_DIR`` names a folder (one ``rankN.events`` file per
rank; see :func:`start_from_env`), and off otherwise: then :func:`span` costs one global lookup and
the ``torch.distributed`` functions are untouched.

Each event is written as it happens, as one JSON line at entry and one at exit, and flushed, so a rank
that is killed or hangs still leaves the record of what it entered and never left.  Times are
``time.monotonic()`` seconds, one system-wide clock for every rank on a Linux machine.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from barrierlab.sites import MACHINERY

#: Collectives every rank of the group must call (their calls are numbered per rank).
COLLECTIVES = (
    "barrier", "monitored_barrier", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "reduce", "gather", "gather_object", "scatter", "scatter_object_list",
    "broadcast_object_list", "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
    "new_group",
)
#: Point-to-point calls: recorded, but not numbered with the collectives (peers differ by rank).
POINT_TO_POINT = ("send", "recv", "isend", "irecv", "batch_isend_irecv")

SPAN_KINDS = ("compute", "io", "wait", "other")

_TORCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(dist.__file__)))
_INTERNAL_FILES = MACHINERY | {contextlib.__file__}  # contextlib: the frames of span()'s decorator


class _Recorder:
    """Writes one JSON line per entry and per exit straight to the file descriptor (one ``write`` call,
    no Python buffer), so a line is in the kernel's page cache before the rank blocks in a collective."""

    def __init__(self, path: str, rank: int, t0: float) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        self.rank = rank
        self.seq = 0
        self.next_id = 0
        self.depth = 0
        self._quoted: dict[str, str] = {}
        self.write({"meta": "start", "rank": rank, "t0": t0, "pid": os.getpid(),
                    "wall": time.time() - (time.monotonic() - t0)})

    def write(self, event: dict) -> None:
        os.write(self.fd, (json.dumps(event, separators=(",", ":")) + "\n").encode())

    def quote(self, text: str) -> str:
        """JSON string literal of ``text``, cached: file names, functions and op names repeat."""
        quoted = self._quoted.get(text)
        if quoted is None:
            quoted = self._quoted[text] = json.dumps(text)
        return quoted

    def enter(self, kind: str, name: str, numbered: bool, site: tuple | None) -> int:
        self.next_id += 1
        line = f'{{"id":{self.next_id},"kind":"{kind}","name":{self.quote(name)},"t":{time.monotonic()!r}'
        if numbered:
            self.seq += 1
            line += f',"seq":{self.seq}'
        if site:
            line += f',"file":{self.quote(site[0])},"line":{site[1]},"func":{self.quote(site[2])}'
        os.write(self.fd, (line + "}\n").encode())
        return self.next_id

    def leave(self, event_id: int, error: BaseException | None = None) -> None:
        if error is None:
            os.write(self.fd, f'{{"id":{event_id},"end":{time.monotonic()!r}}}\n'.encode())
        else:
            self.write({"id": event_id, "end": time.monotonic(), "error": f"{type(error).__name__}: {error}"[:2000]})

    def close(self) -> None:
        os.close(self.fd)


_recorder: _Recorder | None = None
_originals: dict[tuple[object, str], object] = {}


def call_site() -> tuple[str, int, str] | None:
    """The innermost frame outside torch and barrierlab's machinery: the learner's line."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_TORCH_DIR) and filename not in _INTERNAL_FILES:
            return filename, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None


class RecordedWork:
    """Wraps the ``Work`` handle of an ``async_op=True`` call so that ``wait()`` is recorded too."""

    def __init__(self, work: object, name: str, seq: int | None) -> None:
        self._work = work
        self._label = f"wait({name}#{seq})" if seq else f"wait({name})"

    def wait(self, *args, **kwargs):
        recorder = _recorder
        if recorder is None:
            return self._work.wait(*args, **kwargs)
        event_id = recorder.enter("wait", self._label, False, call_site())
        try:
            result = self._work.wait(*args, **kwargs)
        except BaseException as error:
            recorder.leave(event_id, error)
            raise
        recorder.leave(event_id)
        return result

    def __getattr__(self, name: str):
        return getattr(self._work, name)

    def __repr__(self) -> str:
        return f"RecordedWork({self._work!r})"


def _wrap(name: str, original, numbered: bool):
    @functools.wraps(original)
    def recorded(*args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth:
            return original(*args, **kwargs)
        recorder.depth += 1
        event_id = recorder.enter("collective" if numbered else "p2p", name, numbered, call_site())
        seq = recorder.seq if numbered else None
        try:
            result = original(*args, **kwargs)
        except BaseException as error:
            recorder.leave(event_id, error)
            raise
        finally:
            recorder.depth -= 1
        recorder.leave(event_id)
        if result is not None and hasattr(result, "wait") and hasattr(result, "is_completed"):
            return RecordedWork(result, name, seq)
        return result

    recorded.__barrierlab_original__ = original
    return recorded


def _patch() -> None:
    for names, numbered in ((COLLECTIVES, True), (POINT_TO_POINT, False)):
        for name in names:
            original = getattr(c10d, name, None)
            if original is None:
                continue
            wrapper = _wrap(name, original, numbered)
            for module in (c10d, dist):
                if getattr(module, name, None) is original:
                    _originals[(module, name)] = original
                    setattr(module, name, wrapper)


def _unpatch() -> None:
    for (module, name), original in _originals.items():
        setattr(module, name, original)
    _originals.clear()


def start(path: str, rank: int, t0: float | None = None) -> None:
    """Record this process's collectives and spans to ``path`` (JSON lines) until :func:`stop`."""
    global _recorder
    stop()
    _recorder = _Recorder(path, rank, time.monotonic() if t0 is None else t0)
    _patch()


def stop() -> None:
    """Stop recording and restore the original ``torch.distributed`` functions."""
    global _recorder
    if _recorder is not None:
        _unpatch()
        _recorder.close()
        _recorder = None


def start_from_env() -> bool:
    """Start recording into ``$BARRIERLAB_RECORD_DIR/rank$RANK.events`` if that variable is set."""
    folder = os.environ.get("BARRIERLAB_RECORD_DIR")
    if not folder or _recorder is not None:
        return False
    os.makedirs(folder, exist_ok=True)
    rank = int(os.environ.get("RANK", "0"))
    start(os.path.join(folder, f"rank{rank}.events"), rank)
    return True


def recording() -> bool:
    return _recorder is not None


@contextlib.contextmanager
def span(name: str, kind: str = "compute") -> Iterator[None]:
    """Mark a phase of this rank's work (``kind``: compute, io, wait or other) for the timeline.

    >>> with barrierlab.span("load data", kind="io"):
    ...     data = torch.load(path)
    """
    recorder = _recorder
    if recorder is None:
        yield
        return
    if kind not in SPAN_KINDS:
        raise ValueError(f"span kind must be one of {', '.join(SPAN_KINDS)}, not {kind!r}")
    event_id = recorder.enter(kind, name, False, call_site())
    try:
        yield
    except BaseException as error:
        recorder.leave(event_id, error)
        raise
    recorder.leave(event_id)


@dataclass
class Event:
    """One recorded call or span on one rank. ``end`` is None if the rank never left it."""

    rank: int
    kind: str  # "collective", "p2p", "wait", or a span kind: "compute", "io", "wait", "other"
    name: str
    start: float
    end: float | None = None
    seq: int | None = None
    error: str | None = None
    file: str | None = None
    line: int | None = None
    func: str | None = None
    where: str | None = field(default=None, repr=False)  # readable call site, filled in by the parent

    @property
    def duration(self) -> float | None:
        return None if self.end is None else self.end - self.start

    @property
    def is_collective(self) -> bool:
        return self.kind == "collective"

    @property
    def label(self) -> str:
        return f"{self.name} #{self.seq}" if self.seq else self.name


def read_meta(path: str) -> dict | None:
    """The first line of an events file: rank, pid, ``t0`` (monotonic) and ``wall`` (time.time() at t0)."""
    try:
        with open(path) as f:
            item = json.loads(f.readline())
    except (FileNotFoundError, ValueError):
        return None
    return item if item.get("meta") == "start" else None


def read_events(path: str, rank: int | None = None, t0: float | None = None) -> list[Event]:
    """Parse a rank's events file; times become seconds since ``t0`` (default: the recorder's start)."""
    events: dict[int, Event] = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue  # a line cut short by a kill
        if "meta" in item:
            rank = item["rank"] if rank is None else rank
            t0 = item["t0"] if t0 is None else t0
        elif "kind" in item:
            events[item["id"]] = Event(
                rank=rank if rank is not None else -1, kind=item["kind"], name=item["name"],
                start=item["t"] - (t0 or 0.0), seq=item.get("seq"), file=item.get("file"),
                line=item.get("line"), func=item.get("func"),
            )
        elif item.get("id") in events:
            event = events[item["id"]]
            event.end = item["end"] - (t0 or 0.0)
            event.error = item.get("error")
    return sorted(events.values(), key=lambda e: e.start)
