"""A rank's events file, as a contract: its grammar, and the one reader of it.

The recorder (``record.py``) writes one JSON object per line, each flushed as it happens, so a rank that is
killed or hangs still leaves the record of what it entered and never left:

``{"meta": "start", "rank": R, "t0": T, "pid": P, "wall": W}``
    first line: the rank, its monotonic time at the start, its pid, and the wall-clock time at ``t0``.
``{"meta": "joining" | "called", "t": T}``
    a start-up phase of a rank ``barrierlab.run`` launched: its call loaded and joining the group, then its
    function called (the live view tells a rank waiting in barrierlab's start-up from one running the code).
``{"id": N, "kind": K, "name": S, "t": T, ...}``
    entering call or span N (``kind`` one of :data:`EVENT_KINDS`), with optionally ``seq`` (its number among
    the rank's collectives) and ``pos`` (its number among the rank's collectives on its process group: calls pair
    by it, and it stays right where the middle of a long record is not kept), ``file``/``line``/``func`` (the learner's line), ``callers`` (``[file, line,
    func]`` further out, innermost first; ``left_out``: how many frames of a deeper chain were not kept — they lie
    between the two halves of ``callers``, its innermost and its outermost frames), ``within`` (the ``torch.distributed.checkpoint`` function, e.g. "save",
    inside which torch made the call), ``sizes``/``dtypes`` (the tensors it was given), ``objects`` (the
    length of an object collective's list), ``splits`` (an ``all_to_all_single``'s output and input split
    sizes as given, each a list of ints or null for equal blocks; absent when they could not be recorded), ``timeout`` (seconds: the call's own ``timeout=``, else its
    group's), ``async``, ``aliased`` (true: one tensor filled several slots of the call's output list),
    ``outside`` (true: a call naming a group the rank is not in, which torch returned from at once; written whole,
    with its ``end``, and read apart from the rank's calls: ``Record.outside``);
    for rooted and point-to-point calls ``src``/``dst``/``group_src``/``group_dst`` as given, and
    ``group``/``ranks`` for a process group other than the default; for ``new_group`` the members it was asked
    for, ``made`` (sorted, unless ``sort_ranks=False``; absent for all ranks); for ``kind`` "file" the ``path`` (a
    rename's target in ``to``) and the ``call`` (``torch.save``, ``dcp.save``) that opened it; for "store"
    the ``keys`` (with the prefixes of the learner's ``PrefixStore``s: "train/ready"), an ``add``'s ``amount`` and
    the value a ``set``/``compare_set`` wrote (``written``, when shorter than 64 characters);
    for a wait of an async call (kind "wait": ``Work.wait()``, its future's ``wait()`` (or one chained to it by
    ``then`` or collecting it: ``torch.futures.wait_all``/``collect_all``, one wait per call), or the first
    ``work.is_completed()``/``future.done()`` that returned True, with no duration) the call's id ``of``;
    ``lane`` when the event ran elsewhere than on the rank's own thread (a thread: "thread N (name)"; a child
    forked from the rank: "process PID"); for "sync" a "start" or "join" of a thread or child names its lane in
    ``child``, a child's first event "forked" the parent's "fork" in ``of``, and a file "lock" (``value``
    "exclusive" or "shared") or "unlock" the descriptor ``fd``, the file's ``inode`` ("device:inode") and
    ``path``, a ``concurrent.futures`` future's "resolve" (its task ended) and "result" (a thread had its outcome)
    its number ``future`` (also an Event's or Queue's give and take, and a Condition's or Queue's "signal":
    ``notify``, ``task_done``).
    An event with no duration (a file opened, renamed, removed) carries its ``end`` on the same line.
``{"id": N, "end": T}`` / ``{"id": N, "end": T, "error": S}``
    leaving it (the call returned, or raised ``error``); a receive adds ``from`` (the sender), a store
    ``add``/``get`` its ``value`` (a ``check`` "True" or "False").
``{"id": N, "done": T}`` / ``{"id": N, "done": T, "done_error": S}``
    an ``async_op=True`` call's work completed (or failed).
``{"flight": [...], "groups": {...}, "at": T}``
    a copy of torch's flight recorder (later copies of an entry win).

Everything here is read from a process that ran the learner's code, so it is untrusted input: files are
opened without following links or blocking, only regular files are read, lines are bounded in bytes, every
field is type-checked, and a malformed line is counted (``Record.malformed``) and skipped — it never raises.

Readers: :func:`read_record` (a whole file, bounded: its start and its end, the middle counted), used by the
collector for both launchers; :class:`Tail` (what was appended since the last call, bounded per call), used
by the live view. Standard library only.
"""

from __future__ import annotations

import ast
import bisect
import copy
import functools
import json
import json.scanner
import math
import os
import re
import time
from dataclasses import dataclass, field
from typing import BinaryIO

from barrierlab import _files
from barrierlab._protocol import _is_int, _is_number, _refuse_constant, encodable
from barrierlab.sites import Site

#: Kinds of call the recorder writes for ``torch.distributed`` functions.
CALL_KINDS = ("collective", "p2p")
#: The ``value`` of a file event of an exclusive create (``open(p, "x")``, ``O_CREAT | O_EXCL``): the write of the
#: rank that created the file, or the look ("exists") of one that found it there and failed. Two ranks' exclusive
#: creates of one path are an atomic claim whoever wins: the ordering model does not take them for a race.
EXCLUSIVE = "exclusive"
#: Kinds of span a learner marks with ``barrierlab.span(name, kind)``.
SPAN_KINDS = ("compute", "io", "wait", "other")
#: What orders ranks or hands data over besides collectives: store operations and file accesses; and what orders
#: a rank's threads and forked children with its own code, and file locks (kind "sync": a thread's start and
#: join, a fork, a child's first event, a lock taken or released).
HANDOFF_KINDS = ("store", "file", "sync")
EVENT_KINDS = CALL_KINDS + SPAN_KINDS + HANDOFF_KINDS
#: Arguments that name the other rank of a rooted or point-to-point call (global or group rank).
PEER_ARGUMENTS = ("src", "dst", "group_src", "group_dst")
#: Kinds in which a rank is waiting for other ranks (or, for the span kind "wait", says it is).
WAITING_KINDS = ("collective", "p2p", "wait")

#: Lines of an events file read at most: this many from its start and as many from its end (a rank that
#: loops over ``span`` for a whole deadline writes millions; the middle is counted, not parsed).
LINES_KEPT = 5_000
#: The longest line read; a longer one (a span name of megabytes) is skipped and counted as malformed.
MAX_LINE_BYTES = 256 * 1024
#: Bytes of an events file read at most from its start, and as many from its end, whatever the number of
#: lines: a rank that writes lines just under :data:`MAX_LINE_BYTES` (1,200 of 250 kB) took the kernel to
#: 1.7 GB and its deadline +3-8 s when only lines were counted. What is not read is counted as dropped.
BYTES_KEPT = 8 << 20
_MIDDLE_COUNTED = 64 * 1024 * 1024  # a middle up to this size is counted exactly; a larger one is estimated
_BLOCK = 1 << 20
_FIRST_TAIL_BLOCK = 64 * 1024  # the first block read backwards for the last lines; each next one twice as big
_EVENT_KEY = b'"kind":'  # once in each event's first line: the middle's events are counted by it
_TAIL_BYTES = 32 * _BLOCK  # the most read backwards from the end for the last lines


@dataclass
class Event:
    """One recorded call or span on one rank. ``end`` is None if the rank never left it."""

    rank: int
    kind: str  # one of EVENT_KINDS
    name: str
    start: float
    end: float | None = None
    seq: int | None = None
    #: A collective's number among this rank's calls on its process group (None in records written before it
    #: was recorded): where the middle of a record was not kept, ``seq`` and list indices no longer pair calls.
    pos: int | None = field(default=None, repr=False)
    error: str | None = None
    file: str | None = None
    line: int | None = None
    func: str | None = None
    where: str | None = field(default=None, repr=False)  # readable call site, filled in by the collector
    #: Shapes and dtypes of the tensors the call was given, recorded when it was made.
    sizes: list[list[int]] | None = field(default=None, repr=False)
    dtypes: list[str] | None = field(default=None, repr=False)
    #: An object collective's list of objects: its length when the call was made.
    objects: int | None = field(default=None, repr=False)
    #: An all_to_all_single's [output_split_sizes, input_split_sizes] as given (None in one: equal blocks).
    splits: list[list[int] | None] | None = field(default=None, repr=False)
    #: Seconds this call could wait for its peers: its own ``timeout=``, else its group's (None: not known).
    timeout: float | None = field(default=None, repr=False)
    #: ``async_op=True``: ``end`` is when the call returned, ``done`` when its work completed (None: never).
    is_async: bool = field(default=False, repr=False)
    done: float | None = field(default=None, repr=False)
    #: One tensor filled several slots of the call's list of output tensors (``[t] * world_size``).
    aliased: bool = field(default=False, repr=False)
    #: A point-to-point call's ``tag=`` when it was given one other than 0 (gloo pairs a send with a receive of
    #: the same tag on the same group; attack20 a01).
    tag: int | None = field(default=None, repr=False)
    #: A reducing collective's ``op=`` when it was given (``"MAX"``, ``"AVG"``...; absent: the default, SUM): ranks
    #: that pass different ops to one call get, on gloo, each part of the tensor reduced with one rank's op
    #: (review46b M1).
    reduce_op: str | None = field(default=None, repr=False)
    #: The learner's frames further out than ``file:line`` (file, line, func), innermost first: the lines
    #: that called into the helper that made the call.
    callers: list[tuple[str, int, str]] = field(default_factory=list, repr=False)
    #: Frames of a deeper chain not kept, between the innermost callers and the outermost ones.
    left_out: int = field(default=0, repr=False)
    #: The ``torch.distributed.checkpoint`` function (the ops table's name: "save", "load") the learner called
    #: and inside which torch made this call (DCP's planning gather), or None: the learner's own call.
    within: str | None = field(default=None, repr=False)
    #: Rooted and point-to-point calls: the other rank as the call named it (``{"src": 1}``, ``{"dst": 0}``,
    #: ``{"group_src": 0}``), and for a receive the rank the data came from (``{"from": 2}``).
    peer: dict[str, int] = field(default_factory=dict, repr=False)
    #: A call on a process group other than the default one: its name and its members' global ranks.
    group: str | None = field(default=None, repr=False)
    group_ranks: list[int] | None = field(default=None, repr=False)
    #: A ``new_group`` call: the members it asked for as this rank passed them, sorted as torch sorts them
    #: (unless ``sort_ranks=False``: in the order given); None: all ranks, or not given as a list.
    made: list[int] | None = field(default=None, repr=False)
    #: ``kind == "file"``: the path written, read, renamed or removed (a rename's target in ``to``), and for
    #: ``torch.save``/``torch.load``/DCP the call that did it.
    path: str | None = field(default=None, repr=False)
    to: str | None = field(default=None, repr=False)
    call: str | None = field(default=None, repr=False)
    #: ``kind == "store"``: the keys; what ``add`` returned or the start of what ``get`` returned; the amount
    #: an ``add`` added (None: not recorded).
    keys: list[str] | None = field(default=None, repr=False)
    value: str | None = field(default=None, repr=False)
    #: A store ``set``/``compare_set``: the value it wrote, when shorter than the 64 characters kept of a value.
    written: str | None = field(default=None, repr=False)
    amount: int | None = field(default=None, repr=False)
    #: ``kind == "wait"`` (``Work.wait()``, ``Future.wait``, or a poll that saw it complete): the id of the async
    #: call waited for, on this rank.
    of: int | None = field(default=None, repr=False)
    #: This event's id in its rank's file.
    id: int | None = field(default=None, repr=False)
    #: A call naming a group this rank is not in: torch warned and returned at once (``Record.outside``).
    outside: bool = field(default=False, repr=False)
    #: Where it ran, when not on the rank's own thread: a thread the rank started ("thread 1 (Thread-1
    #: (save))"), or a child process forked from it ("process 4242", "process 4242, thread 1 (...)").
    lane: str | None = field(default=None, repr=False)
    #: ``kind == "sync"``, a thread's or child's "start" or "join": the lane of the thread or child it started
    #: or joined. (A child's first event, "forked", names the parent's "fork" event in ``of``.)
    child: str | None = field(default=None, repr=False)
    #: ``kind == "sync"``, a file "lock" or "unlock": the descriptor and the locked file ("device:inode").
    fd: int | None = field(default=None, repr=False)
    inode: str | None = field(default=None, repr=False)
    #: ``kind == "sync"``, a ``concurrent.futures`` future's "resolve" (its task ended) or "result" (a thread had
    #: its outcome): the future's number.
    future: int | None = field(default=None, repr=False)
    #: Its first line was read but the record's middle, which may hold its end, was not (a cut record,
    #: :class:`Dropped`): ``end`` is None because its end was not read, not because the rank never left it
    #: (attack25 a10: a finished run of 6,000 barriers drawn as stuck in the barrier before the cut).
    end_not_read: bool = field(default=False, repr=False)

    @property
    def duration(self) -> float | None:
        return None if self.end is None else self.end - self.start

    @property
    def in_child_process(self) -> bool:
        """Made in a child process forked from the rank (its lane "process 4242[, thread ...]"), not by the rank's
        own process: a DataLoader worker, a multiprocessing.Process."""
        return (self.lane or "").startswith("process")

    @property
    def never_left(self) -> bool:
        """The rank was still inside it when its record ended (not: its end is in a part of the record not read)."""
        return self.end is None and not self.end_not_read

    @property
    def is_collective(self) -> bool:
        return self.kind == "collective"

    @property
    def is_span(self) -> bool:
        return self.kind in SPAN_KINDS

    @property
    def label(self) -> str:
        return f"{self.name} #{self.seq}" if self.seq else self.name


@dataclass
class FlightEntry:
    """One collective in torch's flight recorder on one rank: every collective torch issued, including
    those issued from C++ (DDP's reducer) or from torch's own Python code (DTensor, DCP, FSDP).

    ``seq`` is the collective's position in its process group's sequence (``collective_seq_id``), the
    number gloo pairs calls by; compare ranks by it. ``issuer`` is None when the learner's own
    ``torch.distributed`` call made it (``call`` is then that call's Event), else who did ("DDP backward's
    gradient all_reduce"). gloo's flight recorder has no completion times, and its ``state``/``retired``
    are also set when a call timed out, so neither says the call succeeded."""

    rank: int
    seq: int
    op: str
    group: str = "0"  # the process group's name: "0" is the default group
    p2p: bool = False
    start: float | None = None  # seconds since t0 when torch created the entry
    sizes: list[list[int]] | None = None
    dtypes: list[str] | None = None
    issuer: str | None = None
    file: str | None = None  # the learner's innermost frame that led to it, e.g. the loss.backward() line
    line: int | None = None
    func: str | None = None
    callers: list[tuple[str, int, str]] = field(default_factory=list, repr=False)
    left_out: int = field(default=0, repr=False)  # frames of a deeper chain not kept (see Event.left_out)
    call: Event | None = field(default=None, repr=False)
    where: str | None = field(default=None, repr=False)

    @property
    def from_torch(self) -> bool:
        """Issued by torch itself (C++ or torch's Python), not by the learner's own torch.distributed call."""
        return self.issuer is not None

    @property
    def label(self) -> str:
        return f"{self.op} (seq {self.seq})"

    @property
    def who(self) -> str:
        return self.issuer or f"your {self.call.name if self.call else self.op}"


@dataclass
class Flight:
    """A rank's copy of torch's flight recorder: its entries, and the members of each process group."""

    entries: list[FlightEntry]
    groups: dict[str, list[int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def __getitem__(self, index):
        return self.entries[index]


@dataclass(frozen=True)
class Dropped:
    """Events of a rank's file that were not read (the middle of a very long file): how many, and whether
    that number is an estimate (from the middle's size and the kept lines' average size)."""

    events: int = 0
    estimated: bool = False
    #: every event not kept was a span (the middle's other events were kept): what orders the rank's accesses
    #: and pairs its calls is whole, only the timeline's marks of the middle are missing (attack15 a01)
    spans_only: bool = False

    def __bool__(self) -> bool:
        return self.events > 0

    @property
    def cuts_order(self) -> bool:
        """Whether what was dropped may hold a call that orders or pairs (anything but spans)."""
        return self.events > 0 and not self.spans_only

    def __str__(self) -> str:
        return f"{'about ' if self.estimated else ''}{self.events:,}"


@dataclass
class Record:
    """What one rank's events file holds, as read: the start line, the events (sorted by start), torch's
    flight record (None if never copied), what was not read, and how many lines were malformed."""

    meta: dict | None
    events: list[Event]
    flight: Flight | None
    dropped: Dropped = field(default_factory=Dropped)
    malformed: int = 0
    #: Calls naming a group the rank is not in (``"outside": true``): torch returned at once, doing nothing.
    #: Kept apart from ``events``, which pair across ranks.
    outside: list[Event] = field(default_factory=list)


# --- typed lines -------------------------------------------------------------------------------------------


def ranks_start(ranks) -> float:
    """When the first rank's function started, in the events' clock (seconds since launch; ``ranks``: a
    ``Run`` or its rank results): the time a learner counts from. Timelines start there, as the deadline does,
    so a first run's wait for the warm process is neither drawn nor printed. 0 when no rank started."""
    started = [r.started for r in getattr(ranks, "ranks", ranks) if getattr(r, "started", None) is not None]
    return max(min(started), 0.0) if started else 0.0


#: Callers kept of an event line, innermost and outermost each (the recorder itself writes at most 17, see
#: ``record.keep_chain``): a rank writing lines of 20,000 frames no longer costs the kernel their memory (attack8).
CALLERS_READ = 32


def _frames(value) -> list[tuple[str, int, str]] | None:
    """``[[file, line, func], ...]`` checked, or None if it is not that."""
    if not isinstance(value, list):
        return None
    frames = []
    for frame in value:
        if not (
            isinstance(frame, list)
            and len(frame) == 3
            and isinstance(frame[0], str)
            and _is_int(frame[1])
            and isinstance(frame[2], str)
        ):
            return None
        frames.append((frame[0], frame[1], frame[2]))
    return frames


def _sizes(value) -> bool:
    return isinstance(value, list) and all(isinstance(s, list) and all(_is_int(n) for n in s) for s in value)


def _splits(value) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(s is None or (isinstance(s, list) and all(_is_int(n) and n >= 0 for n in s)) for s in value)
    )


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(s, str) for s in value)


def _optional(item: dict, key: str, check) -> bool:
    return key not in item or item[key] is None or check(item[key])


def _is_meta(item: dict) -> bool:
    return (
        item.get("meta") == "start"
        and _is_int(item.get("rank"))
        and _is_number(item.get("t0"))
        and _optional(item, "wall", _is_number)
        and _optional(item, "pid", _is_int)
    )


def _is_phase(item: dict) -> bool:
    """A start-up phase line (``record.phase``): ``{"meta": "joining" | "called", "t": T}``."""
    return item.get("meta") in ("joining", "called") and _is_number(item.get("t"))


def _is_str(value) -> bool:
    return isinstance(value, str)


def _is_int_list(value) -> bool:
    return isinstance(value, list) and all(_is_int(r) for r in value)


def _are_frames(value) -> bool:
    return _frames(value) is not None


#: The optional fields of an event's first line and the check each must pass when present and not null.
_ENTER_FIELDS = {
    "seq": _is_int,
    "pos": _is_int,
    "file": _is_str,
    "line": _is_int,
    "func": _is_str,
    "callers": _are_frames,
    "sizes": _sizes,
    "dtypes": _strings,
    "splits": _splits,
    "timeout": _is_number,
    "end": _is_number,  # an event written whole (a file access, a span) carries its end
    **{key: _is_int for key in (*PEER_ARGUMENTS, "of", "objects", "left_out", "amount", "fd", "future", "tag")},
    "ranks": _is_int_list,
    "made": _is_int_list,
    **{
        key: _is_str
        for key in ("group", "path", "to", "call", "within", "value", "lane", "child", "inode", "written", "reduce_op")
    },
    "keys": _strings,
    "outside": lambda v: v is True,
}


def _is_enter(item: dict) -> bool:
    if not (
        _is_int(item.get("id"))
        and item.get("kind") in EVENT_KINDS
        and isinstance(item.get("name"), str)
        and _is_number(item.get("t"))
    ):
        return False
    for key, value in item.items():  # only the fields present: a flood's lines have four or five
        check = _ENTER_FIELDS.get(key)
        if check is not None and value is not None and not check(value):
            return False
    return True


def _is_end(item: dict) -> bool:
    return (
        "kind" not in item  # an event's first line that failed its checks is no end line (attack28 a04, a08)
        and _is_int(item.get("id"))
        and ("end" in item or "done" in item)
        and _optional(item, "end", _is_number)
        and _optional(item, "done", _is_number)
        and _optional(item, "error", lambda v: isinstance(v, str))
        and _optional(item, "done_error", lambda v: isinstance(v, str))
        and _optional(item, "from", _is_int)
        and _optional(item, "value", lambda v: isinstance(v, str))
    )


def _is_flight(item: dict) -> bool:
    return isinstance(item.get("flight"), list) and _optional(item, "groups", lambda v: isinstance(v, dict))


_loads = functools.partial(json.loads, parse_constant=_refuse_constant)
#: json's C scanner, built once: ``json.loads(line, parse_constant=...)`` built a decoder and its scanner for
#: every line, and went through four Python-level calls to reach this one (a flood's 10,000 kept lines: about
#: half of their parsing time). It parses one value from a position and says where the value ends.
_scan = json.scanner.make_scanner(json.JSONDecoder(parse_constant=_refuse_constant))
_BLANK = frozenset(" \t\n\r")
_END_LINE = re.compile(rb'\{"id":(\d{1,18}),"end":(-?[0-9.]{1,40}(?:e[-+]?\d{1,4})?)\}')


def parse_lines(raw: bytes, items: list[dict]) -> int:
    """Append the well-formed lines of ``raw`` to ``items`` as dicts; return how many lines were malformed
    (not JSON, not an object, too long, or of a shape the grammar does not have). A last line cut short by a
    kill is malformed too."""
    malformed = 0
    for line in raw.split(b"\n"):
        if not line:
            continue
        if len(line) > MAX_LINE_BYTES:
            malformed += 1
            continue
        end = _END_LINE.fullmatch(line)  # half the lines of a flood: parsed 10x faster than by json
        if end is not None:
            try:
                value = float(end.group(2))
                if math.isfinite(value):
                    items.append({"id": int(end.group(1)), "end": value})
                    continue
            except ValueError:
                pass
        try:
            # NaN or Infinity: malformed. A float too large (1e999) reads as inf, which every numeric field's
            # check refuses (the flight record's too: its entries' "ns", and the rest of what is read of them is
            # checked as ints and strings): checking each float as it is read (finite_json) cost a flood's
            # 12,000 kept lines 0.2 s of the kernel's time after the deadline, and reading each flight line a
            # second time with it a flood of flight lines 1 s a rank.
            text = line.decode("utf-8")
            try:
                item, end = _scan(text, 0)
            except StopIteration:  # not a value at the start of the line (blank space first?): json decides
                item, end = _loads(line), len(text)
            if end < len(text) and not _BLANK.issuperset(text[end:]):
                raise ValueError("more than one value on the line")
            if b"\\ud" in line or b"\\uD" in line:  # a lone surrogate (a file name that is not UTF-8) can be in it
                item = encodable(item)
        except (ValueError, RecursionError):
            malformed += 1
            continue
        if isinstance(item, dict) and (
            _is_enter(item) or _is_end(item) or _is_meta(item) or _is_phase(item) or _is_flight(item)
        ):
            items.append(item)
        else:
            malformed += 1
    return malformed


# --- opening -----------------------------------------------------------------------------------------------


def _open(path: str) -> BinaryIO | None:
    """``path`` for reading if it is a regular file (:func:`barrierlab._files.open_regular`: no link, FIFO or
    device), else None: a rank's missing or odd file reads as an empty record."""
    try:
        return _files.open_regular(path)
    except (OSError, ValueError):
        return None


# --- the whole-file reader ---------------------------------------------------------------------------------


class Head:
    """The first lines of a rank's events file (at most ``keep`` lines and about ``keep_bytes`` bytes), read
    while the rank still writes it: the recorder only appends, so lines once whole never change, and the kernel
    reads them while it waits for the ranks; after the deadline only the file's end is left to read (a
    6-rank flood's heads were half of the kernel's reading then). Pass it to :func:`read_record`, which
    checks that the file is still the one read (else it reads it again)."""

    def __init__(self, path: str, keep: int, keep_bytes: int) -> None:
        self.path, self.keep, self.keep_bytes = path, keep, keep_bytes
        self._start()

    def _start(self) -> None:
        self.items: list[dict] = []
        self.lines = self.offset = self.malformed = 0
        self.size = self.events = 0  # bytes of the lines kept, and how many events they hold (for estimates)
        self.identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the file read
        self.stalled = False  # at a line longer than any kept, not yet whole: left to the last read

    def copy(self) -> Head:
        head = copy.copy(self)
        head.items = list(self.items)
        return head

    @property
    def full(self) -> bool:
        return self.lines >= self.keep or self.offset >= self.keep_bytes

    def read_more(self, lines: int = 200) -> bool:
        """Read the whole lines the rank has added to the head since the last call, at most ``lines`` of them
        (a call stays short: the kernel makes it while it waits for the deadline); nothing once it is full.
        True if it read ``lines`` lines (there may be more)."""
        if self.full or self.stalled:
            return False
        f = _open(self.path)
        if f is None:
            return False
        before = self.lines
        with f:
            try:
                stat = os.fstat(f.fileno())
                if self.identity not in (None, (stat.st_dev, stat.st_ino)) or stat.st_size < self.offset:
                    self._start()  # replaced or cut: start again
                    before = 0
                self.identity = (stat.st_dev, stat.st_ino)
                if stat.st_size > self.offset:
                    self._read(f, final=False, most=lines)
            except OSError:
                self._start()
                return False
        return self.lines - before >= lines

    def _read(self, f: BinaryIO, final: bool, most: int | None = None) -> None:
        """Read on from ``offset`` (at most ``most`` lines); unless ``final``, stop before a line not yet whole
        (the rank is writing it)."""
        f.seek(self.offset)
        lines, too_long = [], 0
        stop = self.keep if most is None else min(self.keep, self.lines + most)
        while self.lines < stop and f.tell() < self.keep_bytes:
            start = f.tell()
            line = f.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if len(line) > MAX_LINE_BYTES and not final:  # skipped by the last read, once (it may be endless)
                f.seek(start)
                self.stalled = True
                break
            if len(line) > MAX_LINE_BYTES:  # skip the rest of an endless line, reading in blocks
                while line and not line.endswith(b"\n"):
                    line = f.readline(_BLOCK)
                too_long += 1
            elif not line.endswith(b"\n") and not final:
                f.seek(start)
                break
            else:
                lines.append(line)
            self.lines += 1
        self.offset = f.tell()
        raw = b"".join(lines)
        self.size += len(raw)
        self.events += raw.count(_EVENT_KEY)
        self.malformed += too_long + parse_lines(raw, self.items)


def _read_kept(
    path: str, keep: int, keep_bytes: int = BYTES_KEPT, count_bytes: int | None = None, head: Head | None = None
) -> tuple[list[dict], Dropped, int, int]:
    """The well-formed lines of an events file, at most ``keep`` lines and about ``keep_bytes`` bytes from its
    start and as many from its end, read incrementally (memory bounded by what is kept), what was dropped
    (counted in a middle of at most ``count_bytes`` bytes, default :data:`_MIDDLE_COUNTED`, else estimated),
    how many were malformed, and how many of the items come before the part not read (all of them when
    nothing was dropped). ``head``: its start as already read (:class:`Head`), if it is still that file."""
    count_bytes = _MIDDLE_COUNTED if count_bytes is None else count_bytes
    f = _open(path)
    if f is None:
        return [], Dropped(), 0, 0
    with f:
        stat = os.fstat(f.fileno())
        size = stat.st_size
        same = head is not None and head.identity == (stat.st_dev, stat.st_ino) and head.offset <= size
        if same and (head.path, head.keep, head.keep_bytes) == (path, keep, keep_bytes):
            head = head.copy()  # read on from where the reading during the run stopped
        else:
            head = Head(path, keep, keep_bytes)
        head._read(f, final=True)
        head_end = head.offset
        items = head.items
        malformed = head.malformed
        dropped = Dropped()
        before = len(items)
        if head_end < size:  # more than ``keep`` lines: find the last ``keep`` lines, reading backwards
            position, tail, lines = size, b"", 0
            floor = max(head_end, size - min(_TAIL_BYTES, keep_bytes))
            step = min(_BLOCK, _FIRST_TAIL_BLOCK)  # most tails are short lines: a MiB was split for 70 kB
            while position > floor and lines <= keep:
                start = max(floor, position - step)
                f.seek(start)
                tail = f.read(position - start) + tail
                position = start
                lines = tail.count(b"\n")
                step = min(2 * step, _BLOCK)
            pieces = tail.split(b"\n")
            if position > head_end:
                pieces = pieces[1:]  # the first piece is the end of a line of the middle
            tail = b"\n".join(pieces[-(keep + 1) :])  # the last piece is what follows the last newline
            middle = size - len(tail) - head_end
            if middle > 0:
                if middle <= min(_MIDDLE_SIFTED, count_bytes):
                    f.seek(head_end)
                    kept, dropped = _sift_middle(f.read(middle), keep, keep_bytes)
                    malformed += parse_lines(kept, items)
                    before = len(items)
                elif middle <= count_bytes:
                    f.seek(head_end)
                    events, left, carried = 0, middle, b""
                    while left > 0:
                        chunk = f.read(min(_BLOCK, left))
                        if not chunk:
                            break
                        # the bytes kept from the last block: a key split across two blocks counts once
                        chunk, left = carried + chunk, left - len(chunk)
                        events += chunk.count(_EVENT_KEY)
                        carried = chunk[-(len(_EVENT_KEY) - 1) :]
                    dropped = Dropped(events, False)
                else:
                    dropped = Dropped(int(middle / _bytes_per_event(head, tail)), True)
            malformed += parse_lines(tail, items)
        if not dropped:
            before = len(items)
    return items, dropped, malformed, before


#: A middle of a record up to this size is sifted: its events other than spans are kept (see :func:`_sift_middle`).
_MIDDLE_SIFTED = 16 * 1024 * 1024
_ENTRY = re.compile(rb'^\{"id":\s?(\d+),\s?"kind":\s?"(\w+)"', re.M)
#: Span kinds a sifted middle drops ("wait" is kept: a Work.wait() record has that kind too).
_DROPPABLE_KINDS = frozenset({b"compute", b"io", b"other"})
_FOLLOW_UP = re.compile(rb'^\{"id":\s?(\d+),\s?"(?:end|done)"', re.M)


def _bytes_per_event(head: Head, tail: bytes) -> float:
    """The bytes an event takes in the file (its first line and its end line), from the kept lines: the tail's
    event and end lines alone when it has enough of them, since the start line and the flight record's copy
    at the end are long lines of no event (review56 C2: a 30,000-barrier record's middle was estimated at
    14,427 events, not the 27,500 it held)."""
    lines = [line for line in tail.split(b"\n") if line.startswith(b'{"id":')]
    events = sum(line.count(_EVENT_KEY) for line in lines)
    if events >= 50:
        return sum(len(line) + 1 for line in lines) / events
    return (head.size + len(tail)) / max(1, head.events + tail.count(_EVENT_KEY))


def _sift_middle(middle: bytes, keep: int, keep_bytes: int) -> tuple[bytes, Dropped]:
    """The lines of a record's middle (whole lines) worth keeping, and what was dropped: the entries of every
    event but spans, and the end and completion lines of those events, at most ``keep`` entries (and as many
    follow-ups) and about ``keep_bytes`` bytes of each. A learner who marks each step with ``bl.span`` writes most
    of a long record in spans; the calls, file accesses and store calls between them are what orders and pairs
    the ranks (attack15 a01: a barrier in a dropped middle made ``run.races()`` report races it had ordered).
    ``spans_only`` when everything dropped was a span."""
    wanted: set[int] = set()
    found: list[tuple[int, bytes]] = []  # (offset in the middle, line), in the order written
    size, events, whole = 0, 0, True

    def line_at(start: int) -> bytes:
        end = middle.find(b"\n", start)
        return middle[start : end if end >= 0 else len(middle)]

    for match in _ENTRY.finditer(middle):
        events += 1
        if match.group(2) in _DROPPABLE_KINDS:
            continue
        line = line_at(match.start())
        if len(found) >= keep or size + len(line) > keep_bytes:
            whole = False
            continue
        wanted.add(int(match.group(1)))
        found.append((match.start(), line))
        size += len(line) + 1
    kept_entries, size = len(found), 0
    if wanted:
        for match in _FOLLOW_UP.finditer(middle):
            if int(match.group(1)) in wanted:
                line = line_at(match.start())
                if len(found) >= 2 * keep or size + len(line) > keep_bytes:
                    whole = False
                    break
                found.append((match.start(), line))
                size += len(line) + 1
    found.sort(key=lambda pair: pair[0])
    return b"\n".join(line for _, line in found), Dropped(events - kept_entries, False, whole)


def read_meta(path: str) -> dict | None:
    """The first line of an events file: rank, pid, ``t0`` (monotonic) and ``wall`` (time.time() at t0)."""
    f = _open(path)
    if f is None:
        return None
    with f:
        items: list[dict] = []
        parse_lines(f.readline(MAX_LINE_BYTES + 1), items)
    return items[0] if items and _is_meta(items[0]) else None


def read_record(
    path: str,
    rank: int | None = None,
    t0: float | None = None,
    index=None,
    keep: int | None = None,
    keep_bytes: int = BYTES_KEPT,
    count_bytes: int | None = None,
    head: Head | None = None,
) -> Record:
    """Read a rank's events file once: its events and its flight record.

    Times become seconds since ``t0`` (default: the recorder's start). ``index`` (a
    :class:`~barrierlab.sites.CodeIndex`) gives frames of code sent by value their real file names. At most
    ``keep`` lines (default :data:`LINES_KEPT`), and about ``keep_bytes`` bytes, are read from the start of the
    file and as many from its end; ``Record.dropped`` says how many events in between were not read (counted
    in a middle of at most ``count_bytes`` bytes, else estimated from the lines read). ``head``: the file's first
    lines as read while the rank wrote it (:class:`Head`, with the same ``keep`` and ``keep_bytes``)."""
    items, dropped, malformed, before = _read_kept(
        path, LINES_KEPT if keep is None else keep, keep_bytes, count_bytes, head
    )
    meta = next((item for item in items if item.get("meta") == "start"), None)
    if meta is not None:
        rank = meta["rank"] if rank is None else rank
    events = _events(items, rank, t0 if t0 is not None else (meta["t0"] if meta else 0.0), index)
    if before < len(items):  # an event begun before the part not read, with no end kept: its end was not read
        begun = {item["id"] for item in items[:before] if "kind" in item and "id" in item}
        for event in events:
            if event.end is None and event.id in begun:
                event.end_not_read = True
    outside = [e for e in events if e.outside]
    if outside:
        events = [e for e in events if not e.outside]
    flight = _flight(items, meta, rank, t0, index, events)
    return Record(meta, events, flight, dropped, malformed, outside)


#: The fields of an event's first line that need no more than copying: an Event made of them is built directly.
_PLAIN = frozenset(("id", "kind", "name", "t", "file", "line", "func", "end"))


def _events(items: list[dict], rank: int | None, t0: float, index) -> list[Event]:
    events: dict[int, Event] = {}
    for item in items:
        if "kind" in item and _PLAIN.issuperset(item):  # a span or a call with no argument noted: a flood's lines
            event = events[item["id"]] = Event(
                rank=rank if rank is not None else -1,
                kind=item["kind"],
                name=item["name"],
                start=item["t"] - t0,
                file=item.get("file"),
                line=item.get("line"),
                func=item.get("func"),
                id=item["id"],
            )
            if item.get("end") is not None:
                event.end = item["end"] - t0
        elif "kind" in item:
            frames = _frames(item.get("callers") or []) or []
            cut = 0
            if len(frames) > 2 * CALLERS_READ:  # the recorder writes 17 at most: a line of 20,000 kept 320 MB
                cut = len(frames) - 2 * CALLERS_READ
                frames = frames[:CALLERS_READ] + frames[-CALLERS_READ:]
            callers = [(_resolved(index, f, n, c), n, c) for f, n, c in frames]
            event = events[item["id"]] = Event(
                rank=rank if rank is not None else -1,
                kind=item["kind"],
                name=item["name"],
                start=item["t"] - t0,
                seq=item.get("seq"),
                pos=item.get("pos"),
                file=item.get("file"),
                line=item.get("line"),
                func=item.get("func"),
                sizes=item.get("sizes"),
                dtypes=item.get("dtypes"),
                objects=item.get("objects"),
                splits=item.get("splits"),
                timeout=item.get("timeout"),
                is_async=bool(item.get("async")),
                aliased=item.get("aliased") is True,
                tag=item.get("tag"),
                reduce_op=item.get("reduce_op"),
                callers=callers,
                left_out=max(0, item.get("left_out") or 0) + cut,
                within=item.get("within"),
                peer={key: item[key] for key in PEER_ARGUMENTS if item.get(key) is not None},
                group=item.get("group"),
                group_ranks=item.get("ranks"),
                made=item.get("made"),
                path=item.get("path"),
                to=item.get("to"),
                call=item.get("call"),
                keys=item.get("keys"),
                amount=item.get("amount"),
                written=item.get("written"),
                of=item.get("of"),
                id=item["id"],
                lane=item.get("lane"),
                child=item.get("child"),
                fd=item.get("fd"),
                inode=item.get("inode"),
                future=item.get("future"),
            )
            if item.get("value") is not None:  # a read that found no file ("missing"), one through a mapping
                event.value = item["value"]
            if item.get("end") is not None:  # an event with no duration: one line
                event.end = item["end"] - t0
            event.outside = item.get("outside") is True
            if event.file and event.callers:  # a helper cloudpickle sent by value: find its file
                event.file = _placed(index, event.file, event.line or 0, event.func or "", event.callers)
        elif "id" in item and item["id"] in events:
            event = events[item["id"]]
            if item.get("end") is not None:
                event.end = item["end"] - t0
                event.error = item.get("error")
                if item.get("value") is not None:
                    event.value = item["value"]
            if item.get("from") is not None:  # a recv's return, or an irecv's sender known at its wait
                event.peer["from"] = item["from"]
            if item.get("done") is not None:
                event.done = item["done"] - t0
                event.error = event.error or item.get("done_error")
    return sorted(events.values(), key=lambda e: e.start)


def _flight_entry(e) -> dict | None:
    """One compacted flight-recorder entry, type-checked (see ``record._flight_entries``)."""
    if not isinstance(e, dict):
        return None
    frames = _frames(e.get("frames") or [])
    if frames is None or not all(_optional(e, key, _is_int) for key in ("seq", "rid", "left_out")):
        return None
    if not _optional(e, "ns", _is_number):
        return None
    if not (_optional(e, "sizes", _sizes) and _optional(e, "dtypes", _strings)):
        return None
    if not (_optional(e, "op", lambda v: isinstance(v, str)) and _optional(e, "issuer", lambda v: isinstance(v, str))):
        return None
    return {**e, "frames": frames}


def _flight(items: list[dict], meta, rank, t0, index, events: list[Event]) -> Flight | None:
    wall = None
    if meta is not None:
        wall = meta.get("wall")
        if t0 is not None and wall is not None:
            wall += t0 - meta["t0"]  # wall time at the caller's t0
    entries: dict[tuple[str, int], dict] = {}
    groups: dict[str, list[int]] = {}
    copies = [item for item in items if "flight" in item]
    if not copies:
        return None
    for item in copies:
        for name, members in (item.get("groups") or {}).items():
            if isinstance(members, list) and all(_is_int(m) for m in members):
                groups[str(name)] = members
    # later copies of an entry win: read from the last, and check an entry only if no later copy was kept (a
    # rank that wrote its flight record over and over cost the kernel seconds after the deadline)
    for item in reversed(copies):
        for raw in reversed(item["flight"]):
            if not (isinstance(raw, dict) and _optional(raw, "rid", _is_int)):
                continue
            key = (str(raw.get("pg")), int(raw.get("rid") or 0))
            if key not in entries:
                e = _flight_entry(raw)
                if e is not None:
                    entries[key] = e
    calls = sorted((e for e in events if e.kind in CALL_KINDS), key=lambda e: e.start)
    starts = [e.start for e in calls]
    result = []
    for e in sorted(entries.values(), key=lambda e: (e.get("ns") or 0, e.get("rid") or 0)):
        start = e["ns"] / 1e9 - wall if e.get("ns") and wall is not None else None
        frames = e["frames"]
        file, line, func = frames[0] if frames else (None, None, None)
        entry = FlightEntry(
            rank=rank if rank is not None else -1,
            seq=int(e.get("seq") or 0),
            op=e.get("op") or "?",
            group=str(e.get("pg")),
            p2p=bool(e.get("p2p")),
            start=start,
            sizes=e.get("sizes"),
            dtypes=e.get("dtypes"),
            issuer=e.get("issuer"),
            file=_resolved(index, file, line, func) if file else None,
            line=line,
            func=func,
            callers=[(_resolved(index, f, n, c), n, c) for f, n, c in frames[1:]],
            left_out=max(0, e.get("left_out") or 0),
        )
        if entry.file and entry.callers:
            entry.file = _placed(index, entry.file, entry.line or 0, entry.func or "", entry.callers)
        if e.get("mine") and start is not None and calls:
            entry.call = _linked_call(calls, starts, start, line)
        if entry.file:
            entry.where = str(Site(entry.file, entry.line, entry.func or ""))
        result.append(entry)
    return Flight(result, groups)


#: How far apart in time a flight entry and the learner's recorded call it is may be found: the wall clock the
#: entry's time is converted with is read once at the rank's start, and a rank preempted between reading the
#: two clocks shifts every entry by that long.
_LINK_WINDOW = 0.05


def _linked_call(calls: list[Event], starts: list[float], start: float, line) -> Event | None:
    """The learner's recorded call that a flight entry of barrierlab's wrapper is: the last call begun by the
    entry's creation time, unless that call is at another line than the entry's learner frame; then the
    call at that line nearest in time, within :data:`_LINK_WINDOW` (a fresh-clone CI on a loaded machine
    linked three back-to-back barriers at lines 42, 43, 44 all to line 44, and the ledger said so)."""
    i = bisect.bisect_right(starts, start + 1e-6) - 1
    if line is None or (i >= 0 and calls[i].line == line):
        return calls[i] if i >= 0 else None
    lo = bisect.bisect_left(starts, start - _LINK_WINDOW)
    hi = bisect.bisect_right(starts, start + _LINK_WINDOW)
    near = [j for j in range(lo, hi) if calls[j].line == line]
    if near:
        return calls[min(near, key=lambda j: abs(starts[j] - start))]
    return calls[i] if i >= 0 else None


# --- the incremental reader --------------------------------------------------------------------------------


class Tail:
    """Reads the well-formed lines appended to one events file since the last call, at most ``budget``
    bytes per call; a file that grows faster than it is read is skipped ahead (``skipped`` bytes), and the
    caller is told so that it forgets the calls it thought open."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""
        self.skipped = 0
        self.malformed = 0

    def read(self, budget: int) -> tuple[list[dict], bool]:
        """New lines (as checked dicts), and whether the reader jumped ahead since the last call."""
        f = _open(self.path)
        if f is None:
            return [], False
        jumped = False
        with f:
            size = os.fstat(f.fileno()).st_size
            if size - self.offset > 16 * budget:  # flooded: jump to the recent past, forget the middle
                self.skipped += size - budget - self.offset
                self.offset, self.partial, jumped = size - budget, b"", True
                f.seek(self.offset)
                f.readline(MAX_LINE_BYTES + 1)  # drop the line we landed in the middle of
                self.offset = f.tell()
            f.seek(self.offset)
            data = f.read(budget)
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        if len(self.partial) > MAX_LINE_BYTES:  # an endless line: drop what we have of it
            self.partial = b""
            self.malformed += 1
        items: list[dict] = []
        self.malformed += parse_lines(b"\n".join(lines), items)
        return items, jumped


# --- where a frame's code lives ----------------------------------------------------------------------------


#: What is found per source file, kept for this many files: (stamp of the text read, its functions, its loops).
_OUTLINES_KEPT = 256
_outlines: dict[str, tuple[tuple, tuple[tuple[str, int, int], ...], tuple[tuple[int, int], ...]]] = {}


def _outline(path: str) -> tuple[tuple[tuple[str, int, int], ...], tuple[tuple[int, int], ...]]:
    """The functions and loops of the Python source at ``path``, from one parse. ``path`` comes from a rank's
    record: its text is read only as :func:`barrierlab._files.source` allows (a regular ``*.py`` file of bounded
    size, or a notebook cell in memory; never ``linecache``, which opened a FIFO and kept a 36 MB text file:
    attack30 a07-a09), and parsing it counts against the same time budget; otherwise there are none."""
    read = _files.source(path)
    if read is None:
        return (), ()
    stamp, lines = read
    kept = _outlines.get(path)
    if kept is not None and kept[0] == stamp:
        return kept[1], kept[2]
    if not _files.within_budget():
        return (), ()
    started = time.perf_counter()
    try:
        nodes = list(ast.walk(ast.parse("".join(lines))))
        found = tuple(
            (node.name, node.lineno, node.end_lineno or node.lineno)
            for node in nodes
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        )
        loops = tuple(
            (node.lineno, node.end_lineno or node.lineno)
            for node in nodes
            if isinstance(node, (ast.For, ast.While, ast.AsyncFor))
        )
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        found, loops = (), ()
    finally:
        _files.charge(time.perf_counter() - started)
    if len(_outlines) >= _OUTLINES_KEPT:
        _outlines.clear()
    _outlines[path] = (stamp, found, loops)
    return found, loops


def functions(path: str) -> tuple[tuple[str, int, int], ...]:
    """(name, first line, last line) of every function the Python source at ``path`` defines (:func:`_outline`)."""
    return _outline(path)[0]


def loops(path: str) -> tuple[tuple[int, int], ...]:
    """(first line, last line) of every ``for``, ``async for`` and ``while`` in the source at ``path``
    (:func:`_outline`)."""
    return _outline(path)[1]


def defines(path: str, func: str, line: int) -> bool:
    return any(name == func and first <= line <= last for name, first, last in functions(path))


def undynamic(frames: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    """Frames whose code cloudpickle sent by value (``<dynamic-code>``, e.g. methods of a class defined in the
    learner's module) placed in the file of another frame that defines that function around that line."""
    files = list(dict.fromkeys(f for f, _, _ in reversed(frames) if not f.startswith("<")))
    return [
        (
            next((path for path in files if defines(path, func, line)), file) if file.startswith("<") else file,
            line,
            func,
        )
        for file, line, func in frames
    ]


def _resolved(index, file: str, line: int, func: str) -> str:
    return index.resolve(file, line, func) if index is not None else file


def _placed(index, file: str, line: int, func: str, callers) -> str:
    """``file`` resolved by the index, else, if still ``<dynamic-code>``, by the files of its callers."""
    file = _resolved(index, file, line, func)
    return undynamic([(file, line, func or "")] + list(callers))[0][0] if file.startswith("<") else file
