"""What orders what in a run: a happens-before model over the recorded events, and the file races it finds.

Nodes are the points where a recorded event began and ended (collectives, point-to-point calls, store
``set``/``add``/``get``/``wait``/``compare_set``, ``Work.wait()`` of async calls, and the file handoffs:
opened for writing or appending, read, renamed, removed; a folder listed or made). Edges:

- program order: each rank's events one after another, in the order they began;
- collectives, by role and backend, from the ops table (:mod:`barrierlab.ops`): a rank whose column says it
  waits for ``"all"`` leaves only after every member entered; ``"root"``/``"parent"`` after the root entered;
  gloo's ``broadcast``, whose tree is known, gives each rank an edge from the entry of every rank above it
  (:func:`_broadcast_parents`: the data comes down that chain) and of its direct children
  (:func:`_broadcast_children`: a send waits for its receiver), whatever its role; ``"children"`` gives none
  for other ops; ``"none"`` gives none. Calls pair by position in their process group. An async call
  orders nothing when it returns; its ``Work.wait()`` gets the edges the blocking call would have (so does a
  ``wait()`` of its future, or the first ``work.is_completed()``/``future.done()`` that returned True: the rank
  saw it complete);
- ``send`` -> the matching ``recv`` (the k-th send from A to B on a group with a tag, the k-th receive on B from
  A on that group with that tag, as gloo pairs them; a peer named
  by its rank in the group, ``group_dst``/``group_src``, is mapped through the group's ranks), and back
  where the column says the sender waits for its receiver (gloo);
- a store key: the first ``set``/``add``/``compare_set`` (``multi_set``, ``append``, ``queue_push``) of a key that
  began before a ``wait``/``get`` of it (``multi_get``, a blocking ``queue_pop``, or a ``check`` that found it)
  returned, unless a ``delete_key`` of it certainly came between, is ordered (and a ``get`` whose value holds
  every append begun before it after each of them; a ``queue_pop`` after the one push of the value it returned)
  before that return; a ``get`` of a counter that read N, or an ``add`` that returned N, comes after the
  ``add``s of that key without which it could not have read N (:class:`_Counter`: those the other adds could
  not make up for, and with amounts of one sign those that returned a value no further than N; an ``add`` of
  0 only reads the counter); a ``get`` that returned a value one ``set`` alone wrote comes after that set.
  Keys are matched by name, with the prefixes of the learner's ``PrefixStore``s;
- ``isend``/``irecv`` return at once, like ``async_op=True`` calls: their edges go to their ``Work.wait()``;
- a rank's threads and forked children (a ``DataLoader``'s workers) are lanes of their own: program order holds
  within a lane; a thread's lane comes after the ``Thread.start`` that began it and before a ``join`` that saw it
  end, a child's after the ``fork`` and before the ``os.waitpid`` (``Process.join``) that reaped it, and nothing
  else orders a lane with the rest of its rank but a ``concurrent.futures`` future's ``result()``
  (``concurrent.futures.wait``/``as_completed`` that returned it done; after the task that resolved it), a
  ``ThreadPool``'s ``apply``/``apply_async(...).get()`` (after its task), a ``threading.Event`` or ``queue.Queue``
  of the learner's: a ``wait``/``is_set`` that found the event set, or a ``get`` that returned, comes after its
  first ``set`` or ``put`` (attack13 a03), and a ``threading.Condition``'s ``wait``/``wait_for`` or a Queue's
  ``join`` that returned comes after every ``notify``/``notify_all`` or ``task_done`` before it (attack20 a07; a
  ``multiprocessing`` queue between processes, ``ThreadPool.map`` and the lock of a plain ``with lock:`` are not
  modelled) (:meth:`Order._lanes`);
- file locks (``fcntl.flock``/``lockf``, ``filelock.FileLock``): of two holds of one file on two ranks that
  exclude each other, the one granted first was released before the other was granted (:meth:`Order._locks`).

It is a model of the *host*: which Python-level events of one rank must have happened before which of
another's. On NCCL it follows the host's view (a collective returns once enqueued); what the GPU's CUDA
streams order is not modelled, nor ``TORCH_NCCL_BLOCKING_WAIT``. Collectives torch issues for the learner are:
a functional collective (``_functional_collectives``: DTensor's, or the learner's own) is recorded as an async call
whose ``wait_tensor`` is its wait; DDP's gradient all_reduce, issued from C++ and seen only in torch's flight record,
orders on gloo what each rank did before issuing it before what every rank does after its ``backward()``
(:meth:`Order._gradient_all_reduces`); other C++ collectives (DDP's buffer and bucket broadcasts) order nothing here.
By default the NCCL model takes each group's communicator as already formed (``init_process_group(device_id=...)``
forms it there, else an earlier collective did); with ``formed=False`` a group's first collective forms it,
and ``ncclCommInitRank`` "implicitly synchronizes with other ranks" (NCCL's API docs), so every member's host
waits there for every member, whatever the op (``init_process_group``'s docstring on ``device_id``: "the
communicator is immediately formed ... rather than the normal lazy call").
A file access runs from its open to the last synchronising call (of any of the rank's threads) after which the
recorder saw the file still open (its "held" event), or is one point, the open, when it was closed before the next
such call: bytes written through a file kept open past a barrier may land after it; a file not empty at its open
whose offset was still 0 when such a call returned is taken as read after it. A folder one rank makes (``os.mkdir``, ``os.makedirs``, ``Path.mkdir``) is needed
by every access of a path inside it on another rank, unless that rank made the folder (or one around the path)
itself first: ``makedirs(..., exist_ok=True)`` on every rank needs no order. Only the default group's members are known for calls without ``group``.
"""

from __future__ import annotations

import bisect
import math
import os
from collections import deque
from dataclasses import dataclass, field
from functools import cached_property

from barrierlab import ops
from barrierlab.events import EXCLUSIVE, ranks_start
from barrierlab.sites import Site

BACKENDS = ("gloo", "nccl")


def unwaited(events, before: float = math.inf) -> list:
    """The ``async_op=True`` calls among one rank's ``events`` that started by ``before`` and whose ``Work.wait()``
    had not returned by then (never, with the default): nothing made their work complete for what came after."""
    waited = {e.of for e in events if e.kind == "wait" and e.of is not None and e.end is not None and e.end <= before}
    return [e for e in events if e.is_async and e.start <= before and e.id not in waited]


#: Kinds of recorded event the model orders (``wait`` only for ``Work.wait()``, not ``span(kind="wait")``).
_ORDERED_KINDS = ("collective", "p2p", "store", "file", "sync")
_ASYNC_P2P = {"isend": "send", "irecv": "recv"}
_SENDS = {"send": "recv", "isend": "recv", "send_object_list": "recv_object_list"}
_RECVS = {"recv", "irecv", "recv_object_list"}
#: File accesses: which pairs on different ranks conflict.
_WRITES = {"write"}
_CHANGES = {"write", "append", "remove", "rename", "mkdir"}
#: What the NCCL column of a table assumes, printed under it.
NCCL_FORMED_NOTE = (
    "* once the group's NCCL communicator exists; without init_process_group(device_id=...) "
    "a group's first collective forms it and holds every rank"
)
#: (review54 M4: "between them" is after the change is complete: a barrier after a write's open but before its
#: close still let the reader find half the file)
ORDERERS = (
    "a barrier, a blocking all_reduce of a non-empty tensor on gloo, a store key or send/recv between them, once "
    "the change is complete (the file written and closed), would order them"
)

#: For a removal, which must come last (review60b M1: "once the file is written and closed" read wrongly for a
#: read that a removal must wait for).
ORDERERS_BEFORE_REMOVAL = (
    "a barrier, a blocking all_reduce of a non-empty tensor on gloo, a store key or send/recv after the other "
    "rank's use of the file is over (a file it opened, closed) and before the removal would order them"
)


def _sorted_events(run, rank: int):
    events = [e for e in run[rank].events if e.kind in _ORDERED_KINDS or (e.kind == "wait" and e.of is not None)]
    return sorted(events, key=lambda e: (e.start, e.id or 0))


@dataclass(frozen=True)
class Access:
    """One file access: ``how`` is write, append, read, remove, rename (of ``path``, to ``event.to``), list
    (``path`` is a folder whose entries were read: ``os.listdir``, ``os.scandir``, ``glob``) or mkdir (``path``
    is a folder made: it counts as an access of every path inside it)."""

    rank: int
    how: str
    path: str
    event: object
    #: The event whose place in the rank's order the access takes, when not its own: an open of a file that the
    #: same thread then locks (its lock file) is taken inside the hold it opened the file for (the reads and
    #: writes through the descriptor happen there), unless the open truncated the file.
    at: object = field(default=None, repr=False, compare=False)
    #: The event where the access ends in the rank's order, when not where it begins: a file kept open across a
    #: synchronising call may be read or written through up to the last call it was seen open after (its
    #: "held" event; attack15 a03, a11).
    until: object = field(default=None, repr=False, compare=False)

    @property
    def who(self) -> str:
        """Who made the access: "rank 0", or its lane there ("rank 0's thread 1 (saver)", "rank 0's child process 9")."""
        lane = getattr(self.event, "lane", None)
        if not lane:
            return f"rank {self.rank}"
        return f"rank {self.rank}'s {'child ' if lane.startswith('process ') else ''}{lane}"

    def where(self) -> str:
        e = self.event
        if not e.file:
            return "an unknown line"
        return Site(e.file, e.line or 0, e.func or "").in_sentence


#: The most races one run's model lists (attack15 a07: 8 ranks each appending to and reading one log 500 times
#: made 14 million, and the diagnosis took 127 s). Beyond it the list is cut: :class:`Races` says so.
MAX_RACES = 1000


class Races(list):
    """The races of a run, in the order of their second access; ``cut`` when there were more than
    :data:`MAX_RACES` (the first ones found, path by path, are kept); ``undecided``: pairs left out because a DDP
    gradient all_reduce older than torch's flight record (its last 2,000 entries by default) may order them."""

    cut = False
    undecided = 0

    def count_text(self) -> str:
        """``"3"``, or ``"at least 1000"`` for a cut list."""
        return f"at least {len(self)}" if self.cut else str(len(self))


@dataclass(frozen=True)
class Race:
    """Two accesses of one path on two ranks, at least one changing it, that nothing orders."""

    first: Access
    second: Access
    backend: str

    origin: float = 0.0  # the run's time zero (its ranks' start): times are printed from there
    #: ``second`` is a read that found no file after a rank had removed the path or renamed it away (by the
    #: clock): it was already gone, not "not there yet" (review15b)
    gone: bool = False

    def __str__(self) -> str:
        a, b = self.first, self.second
        if self.made:
            return self._folder_text()
        entry = a.how == "list" or b.how == "list"  # a folder's listing against a change of one of its entries
        said = f"{b.who} {_did(b, entry, gone=self.gone)} at {b.where()} (t={self._t(b)}{self._kept(b)})"
        a_end = (a.until or a.event).end
        if a_end is not None and a_end <= b.event.start:  # over by then, but only by the clock
            if (
                a.how in ("read", "look") and found_no_file(a.event) and b.how == "write"
            ):  # too early: "between them" misleads
                return (
                    f"{said} after {a.who} {_did(a, entry, of_it=a.path == b.path)} at {a.where()} (t={self._t(a)}{self._kept(a)}): "
                    f"nothing orders them on {self.backend}, and the write should come first — a barrier, a "
                    f"blocking all_reduce of a non-empty tensor on gloo, a store key or send/recv after the write and before the {a.how} "
                    f"would order it before the {a.how}"
                )
            if self.gone and b.how in ("read", "look") and a.how == "write":
                # the removal, not this change, is why the file was missing: its own race says so (review51b)
                return (
                    f"{said}; {a.who} {_did(a, entry)} earlier, at {a.where()} (t={self._t(a)}{self._kept(a)}), "
                    f"and nothing orders that before the {b.how} on {self.backend}: it came first by timing alone — "
                    f"{self._orderers}"
                )
            return (
                f"{said} after {a.who} {_did(a, entry, of_it=a.path == b.path)} at {a.where()} (t={self._t(a)}{self._kept(a)}), but "
                f"nothing orders them on {self.backend}: it came first by timing alone — {self._orderers}"
            )
        return (
            f"{said} while {a.who} was {_doing(a, entry, a.path == b.path)} at {a.where()} (t={self._t(a)}{self._kept(a)}); nothing orders "
            f"them on {self.backend} — {self._orderers}"
        )

    @property
    def _orderers(self) -> str:
        """What would order the two accesses: after a change is complete, or before a removal."""
        return ORDERERS_BEFORE_REMOVAL if "remove" in (self.first.how, self.second.how) else ORDERERS

    def _t(self, access: Access) -> str:
        return f"{access.event.start - self.origin:.3f} s"

    def _kept(self, access: Access) -> str:
        """For a file kept open past a synchronising call, until when: its reads or writes may come that late."""
        if getattr(access.event, "value", None) == "mmap" and access.how == "read":
            return ", with mmap=True: its tensors read the file whenever they are used, after the load returned"
        if access.until is None or access.until.start is None:
            return ""
        kept = f", and kept open past a call that returned at t={access.until.start - self.origin:.3f} s"
        return kept + (": close it before that call" if access.how in ("write", "append") else "")

    @property
    def made(self) -> Access | None:
        """The folder made, when the race is one rank's ``mkdir`` against another's use of a path inside it."""
        made, used = (self.first, self.second) if self.first.how == "mkdir" else (self.second, self.first)
        return made if made.how == "mkdir" and _inside(used.path, made.path) else None

    def _folder_text(self) -> str:
        made = self.made
        used = self.second if made is self.first else self.first
        what = used.event.call or {"write": "open for writing", "append": "open for appending"}.get(used.how)
        what = f"{what} of" if what else _DID[used.how]
        failed = " (it failed)" if used.event.error else ""
        return (
            f"{made.who} makes the folder `{_name(made.path)}` at {made.where()} (t={self._t(made)}) and "
            f"nothing orders it before {used.who}'s {what} `{_name(used.path)}` inside it at {used.where()} "
            f"(t={self._t(used)}){failed} on {self.backend}: {ORDERERS}, or a makedirs on every rank"
        )


@dataclass(frozen=True)
class Handoff:
    """Two accesses of one path on two ranks, one changing it, that the model orders: ``first`` happens before
    ``second``."""

    first: Access
    second: Access
    order: Order = field(repr=False, compare=False)

    @cached_property
    def chain(self) -> tuple:
        """One shortest chain of points from the end of ``first`` to the start of ``second`` (points as
        :meth:`Order.enter`/:meth:`Order.leave` give them): the calls that order the handoff."""
        a, b = self.first, self.second
        return tuple(self.order.path(self.order.access_leave(a), self.order.access_enter(b)) or ())

    @property
    def edges(self) -> tuple:
        """The (from point, to point) edges between ranks along the chain."""
        return tuple((p, q) for p, q in zip(self.chain, self.chain[1:]) if p[0] != q[0])


_DOING = {"write": "writing", "append": "appending to", "read": "reading", "remove": "removing"}
_DOING.update(rename="renaming", list="listing", mkdir="making", ensure="making sure of", look="looking for")
_DID = {"write": "wrote", "append": "appended to", "read": "read", "remove": "removed", "rename": "renamed"}
_DID.update(list="listed", mkdir="made", ensure="made sure of", look="looked for")


#: Calls recorded as one access of their folder that are collectives of the whole group: every rank makes one,
#: the shards, metadata and folder they touch inside are recorded as accesses of their own, ordered by the
#: collectives the call makes, so the call's own span of the folder is no access (each rank's dcp.save of
#: one checkpoint would race with the others'). ``dcp.async_save`` writes later, outside its call: kept.
_COLLECTIVE_FILE_CALLS = frozenset({"dcp.save", "dcp.load"})


def found_no_file(event) -> bool:
    """A read that found no file: an ``open`` of a path that did not exist (recorded ``value: "missing"``), or a
    wrapped call (``torch.load``) that failed with ``FileNotFoundError``."""
    return getattr(event, "value", None) == "missing" or (getattr(event, "error", None) or "").startswith(
        "FileNotFoundError"
    )


def _did(access: Access, entry: bool, of_it: bool = False, gone: bool = False) -> str:
    """What ``access`` did, in words (``gone``: a read that found no file came after the path was removed)."""
    if entry and access.how == "write":
        return f"created `{_name(access.path)}`"
    if access.how == "write" and getattr(access.event, "name", "") == "rename":  # os.replace(tmp, path) writes path
        return "replaced it" if of_it and not entry else f"replaced `{_name(access.path)}`"
    if access.how == "write" and getattr(access.event, "value", None) == "link":  # os.symlink/os.link(src, path)
        return "linked it into place" if of_it and not entry else f"linked `{_name(access.path)}` into place"
    if access.how == "write" and getattr(access.event, "value", None) == "truncate":  # os.truncate(path, n)
        return "truncated it" if of_it and not entry else f"truncated `{_name(access.path)}`"
    if access.how in ("write", "append") and access.at is not None and getattr(access.at, "to", None) == access.path:
        how = "writing" if access.how == "write" else "appending"  # renamed while open: attack17 a14
        return f"opened `{_name(access.event.path)}` for {how} (renamed to `{_name(access.path)}` while open)"
    if access.how == "write":  # a write is recorded where the file was opened: the bytes come later
        return "opened it for writing" if of_it and not entry else f"opened `{_name(access.path)}` for writing"
    if access.how == "read" and found_no_file(access.event):
        why = "already removed" if gone else "no file yet"
        return f"tried to read it ({why})" if of_it and not entry else f"tried to read `{_name(access.path)}` ({why})"
    if access.how == "look":  # os.path.exists and kin: what it found is all the rank took from the path
        why = "already removed" if gone else "not there yet" if found_no_file(access.event) else "found it"
        return f"looked for it ({why})" if of_it and not entry else f"looked for `{_name(access.path)}` ({why})"
    if of_it and not entry:
        return f"{_DID[access.how]} it"
    return f"{_DID[access.how]} `{_name(access.path)}`"


def _doing(access: Access, entry: bool, same: bool = True) -> str:
    if entry and access.how == "write":
        return f"creating `{_name(access.path)}`"
    if entry or access.how == "list" or not same:  # another path than the other access's (a folder around it)
        return f"{_DOING[access.how]} `{_name(access.path)}`"
    return f"{_DOING[access.how]} it"


class Order:
    """The happens-before relation of one run on one backend."""

    def __init__(self, run, backend: str = "gloo", *, formed: bool = True) -> None:
        _check_run(run)
        _check_backend(backend)
        if not isinstance(formed, bool):
            raise TypeError(f"formed must be a bool, not {type(formed).__name__}")
        self.backend = backend
        #: NCCL only: the groups' communicators exist before the run's first collective (see the module docstring).
        self.formed = formed
        self.origin = ranks_start(run)
        self.world = len(run.ranks)
        self.events = {r.rank: _sorted_events(run, r.rank) for r in run.ranks}
        #: every rank's record was kept whole (no middle dropped): a counter's adds are all known
        self._complete = not any(getattr(getattr(r, "events_dropped", None), "cuts_order", False) for r in run.ranks)
        self._point: dict[tuple[int, int], tuple[int, int]] = {}  # (rank, id(event)) -> (rank, index) of enter
        #: each rank's lanes (None: the rank's own thread; else a thread it started or a child it forked): the lane
        #: of each of its events, and the index of the next event in the same lane (None: the lane's last)
        self._lane: dict[int, list] = {}
        self._next: dict[int, list[int | None]] = {}
        self._first_in_lane: dict[int, list[bool]] = {}
        for rank, events in self.events.items():
            lanes = [getattr(e, "lane", None) for e in events]
            following: list[int | None] = [None] * len(events)
            first = [True] * len(events)
            last: dict = {}
            for i, e in enumerate(events):
                self._point[(rank, id(e))] = (rank, 2 * i)
                j = last.get(lanes[i])
                if j is not None:
                    following[j] = i
                    first[i] = False
                last[lanes[i]] = i
            self._lane[rank], self._next[rank], self._first_in_lane[rank] = lanes, following, first
        self.edges: dict[tuple[int, int], set[tuple[int, int]]] = {}
        #: edges between two lanes of one rank (a thread's start and join, a fork): not between ranks
        self.lane_edges: dict[tuple[int, int], set[tuple[int, int]]] = {}
        #: edges of collectives torch issued that the record holds no call for (DDP's gradient all_reduce): they
        #: order, but no recorded call waited there (:meth:`edges_into` leaves them out)
        self.torch_edges: dict[tuple[int, int], set[tuple[int, int]]] = {}
        #: rank -> until when (run clock) its flight record lost its oldest entries, in a run with DDP's gradient
        #: all_reduces: before then those that would order file accesses are not known (attack17 a11)
        self.flight_blind: dict[int, float] = {}
        #: (rank, lane) -> (lane, index) of the event that started it (a thread's start, a child's fork) and of the
        #: join that ended it, where the model has that edge
        self._started: dict[tuple, tuple] = {}
        self._joined: dict[tuple, tuple] = {}
        #: (rank, async call id) -> the waits recorded as its Future.then callbacks ran (see :meth:`_waits_of`)
        self._callback_waits: dict[tuple[int, int], list] = {}
        for rank, events in self.events.items():
            for e in events:
                if e.kind == "wait" and e.name == "Future.then":
                    self._callback_waits.setdefault((rank, e.of), []).append(e)
        self._lanes()
        self._collectives()
        self._gradient_all_reduces(run)
        self._point_to_point()
        self._store()
        #: (rank, lane, path) of each thread that waited for a published file (:meth:`_published`): its misses
        #: before the find were the wait, not a race
        self._waited_for: set[tuple[int, object, str]] = set()
        #: (rank, lane, folder) -> when the last wait that listed that folder found its file (see _waited_in)
        self._waited_dirs: dict[tuple[int, object, str], float] = {}
        self._published()
        #: id(open event) -> the lock event whose hold the open is taken in (:attr:`Access.at`)
        self._at: dict[int, object] = {}
        self._locks()
        #: id(open event) -> the "held" event where the access through it ends (:attr:`Access.until`)
        self._until: dict[int, object] = {}
        self._held()
        self._reach: dict[tuple[int, int], set[tuple[int, int]]] = {}
        self._vc: dict[tuple[int, int], list[int]] | None = None
        self._column: dict[tuple[int, object], int] = {}

    # --- points and edges
    def enter(self, rank: int, event) -> tuple[int, int]:
        return self._point[(rank, id(event))]

    def leave(self, rank: int, event) -> tuple[int, int]:
        r, i = self._point[(rank, id(event))]
        return (r, i + 1)

    def lane_of(self, point: tuple[int, int]):
        """The lane of ``point``'s event: None for the rank's own thread, else the thread's or child's name."""
        return self._lane[point[0]][point[1] // 2]

    def _edge(self, a: tuple[int, int], b: tuple[int, int]) -> None:
        if a[0] != b[0]:
            self.edges.setdefault(a, set()).add(b)
        elif self.lane_of(a) != self.lane_of(b):
            self.lane_edges.setdefault(a, set()).add(b)
        if self._callback_waits and b[1] % 2:  # what a wait's return gets, the callbacks of its call get too
            e = self.events[b[0]][b[1] // 2]
            if e.kind == "wait":
                for other in self._callback_waits.get((b[0], e.of), ()):
                    if other is not e:
                        self._edge(a, self.leave(b[0], other))

    def _lanes(self) -> None:
        """A rank's threads and forked children: a thread's events come after the ``Thread.start`` that named its
        lane and before a ``join`` that saw it end; a child's after the parent's ``fork`` its first event names
        (``forked``), and before a ``join`` (``os.waitpid``) that reaped it; a ``concurrent.futures`` task's events
        (before its future's "resolve") before a ``result()`` that had its outcome; every "signal" of a
        ``Condition`` (``notify``) or ``Queue`` (``task_done``) before a wait on it that returned (``wait``,
        ``wait_for``, ``Queue.join``: attack20 a07). Nothing else orders them with the lane that started them
        (attack11 a11, a16)."""
        for rank, events in self.events.items():
            first: dict = {}
            last: dict = {}
            forks: dict[int, int] = {}
            resolved: dict[int, int] = {}  # a concurrent.futures future's number -> its "resolve"
            signals: dict[int, list[int]] = {}  # a Condition's or Queue's signals' number -> each "signal"
            for i, e in enumerate(events):
                lane = self._lane[rank][i]
                first.setdefault(lane, i)
                last[lane] = i
                if e.kind == "sync" and e.name == "fork" and e.id is not None:
                    forks[e.id] = i
                elif e.kind == "sync" and e.name == "resolve" and e.future is not None:
                    resolved.setdefault(e.future, i)
                elif e.kind == "sync" and e.name == "signal" and e.future is not None:
                    signals.setdefault(e.future, []).append(i)
            for i, e in enumerate(events):
                if e.kind != "sync":
                    continue
                if e.name == "start" and e.child is not None and e.child != e.lane and first.get(e.child, -1) > i:
                    self._edge((rank, 2 * i + 1), (rank, 2 * first[e.child]))
                    self._started.setdefault((rank, e.child), (e.lane, i))
                elif e.name == "join" and e.child is not None and e.child != e.lane and -1 < last.get(e.child, i) < i:
                    self._edge((rank, 2 * last[e.child] + 1), (rank, 2 * i))
                    self._joined.setdefault((rank, e.child), (e.lane, i))
                elif e.name == "result" and resolved.get(e.future, i) < i:
                    self._edge((rank, 2 * resolved[e.future] + 1), (rank, 2 * i))
                elif e.name == "result" and e.future in signals:
                    for j in signals[e.future]:
                        if j < i and self._lane[rank][j] != e.lane:
                            self._edge((rank, 2 * j + 1), (rank, 2 * i))
                elif e.name == "forked" and e.of in forks and forks[e.of] < i and self._first_in_lane[rank][i]:
                    self._edge((rank, 2 * forks[e.of] + 1), (rank, 2 * i))
                    self._started.setdefault((rank, e.lane), (self._lane[rank][forks[e.of]], forks[e.of]))

    def _gradient_all_reduces(self, run) -> None:
        """DDP's gradient all_reduces, which torch issues from C++ during ``backward()`` (the recorder sees them only
        in torch's flight record, with the time each was issued): on gloo, ``backward()`` returns once every
        bucket's all_reduce completed (``Reducer::finalize_backward`` waits on each), and an all_reduce of a
        non-empty tensor completes on a rank only after every member entered it. So what each rank did before it
        issued one happens before what every other rank does after it issued its own: the next event the rank
        records, once its ``backward()`` returned (attack16 a03: a file ordered by a DDP step was a false race).
        Every rank's flight record must be read; a learner's comm hook, or a call recorded inside ``backward()``,
        is not modelled. On NCCL ``backward()`` returns with them queued: nothing."""
        if self.backend != "gloo":
            return
        at_position: dict[tuple[str, int], dict[int, object]] = {}
        members: dict[str, set[int]] = {}
        for result in run.ranks:
            flight = getattr(result, "flight", None)
            if not flight or result.rank not in self.events:
                return
            blind = _flight_blind_until(flight)
            if blind is not None:
                self.flight_blind[result.rank] = blind
            for name, ranks in (getattr(flight, "groups", None) or {}).items():
                members.setdefault(str(name), set(ranks))
            for entry in flight:
                if (
                    getattr(entry, "op", None) == "all_reduce"
                    and getattr(entry, "issuer", None) == "DDP backward's gradient all_reduce"
                    and not entry.p2p
                    and entry.start is not None
                    and any(math.prod(size) for size in entry.sizes or ())
                ):
                    at_position.setdefault((entry.group, entry.seq), {})[result.rank] = entry
        own: dict[int, tuple[list[float], list[int]]] = {}  # each rank's own thread: its events' starts, indices
        for rank, events in self.events.items():
            indices = [i for i in range(len(events)) if self._lane[rank][i] is None]
            own[rank] = ([events[i].start for i in indices], indices)
        for (group, _), matched in at_position.items():
            # every member of the group the model's process group holds (attack17 a10: DDP on a group of its own)
            expected = members.get(group) if group != "0" else None
            if set(matched) != (expected if expected else set(self.events)) or len(matched) < 2:
                continue
            before = {rank: self._point_before(rank, entry.start, own[rank]) for rank, entry in matched.items()}
            after = {rank: self._point_after(rank, entry.start, own[rank]) for rank, entry in matched.items()}
            for rank, later in after.items():
                if later is None:
                    continue
                for other, earlier in before.items():
                    if other != rank and earlier is not None:
                        self.torch_edges.setdefault(earlier, set()).add(later)

    def _point_before(self, rank: int, t: float, own: tuple[list[float], list[int]]) -> tuple[int, int] | None:
        """The last point of the rank's own thread at or before ``t`` (``own``: that thread's event starts and
        indices, in order)."""
        at = bisect.bisect_right(own[0], t) - 1
        if at < 0:
            return None
        i = own[1][at]
        e = self.events[rank][i]
        return (rank, 2 * i + 1) if e.end is not None and e.end <= t else (rank, 2 * i)

    def _point_after(self, rank: int, t: float, own: tuple[list[float], list[int]]) -> tuple[int, int] | None:
        """The first event the rank's own thread began after ``t``: its entry."""
        at = bisect.bisect_right(own[0], t)
        return (rank, 2 * own[1][at]) if at < len(own[1]) else None

    def _waits_of(self, rank: int) -> dict[int, object]:
        """Each async call's wait on ``rank``: the last one not made in a ``Future.then`` callback (those run on a
        torch thread once the call completed, attack18 a15: :meth:`_edge` gives them what the wait gets). A wait
        that raised (``wait(timeout=...)`` expired: "Operation timed out!") returned before the call completed:
        it orders nothing (attack21 a01)."""
        found = {e.of: e for e in self.events[rank] if e.kind == "wait" and e.name != "Future.then" and not e.error}
        for (of_rank, of), callbacks in self._callback_waits.items():
            if of_rank == rank and of not in found:  # no other wait: the first callback's stands for the call
                found[of] = callbacks[0]
        return found

    def _released(self, rank: int, event, waits: dict) -> tuple[int, int] | None:
        """The point at which a call's waiting is over: its return, or for an async call (``async_op=True``,
        ``isend``, ``irecv``) its Work.wait()."""
        if not (event.is_async or event.name in _ASYNC_P2P):
            return self.leave(rank, event)
        wait = waits.get(event.id)
        return None if wait is None else self.leave(rank, wait)

    def _collectives(self) -> None:
        calls: dict[str, dict[int, list]] = {}
        for rank, events in self.events.items():
            for e in events:
                if e.kind == "collective":
                    calls.setdefault(e.group or "", {}).setdefault(rank, []).append(e)
        waits = {rank: self._waits_of(rank) for rank in self.events}
        for by_rank in calls.values():
            for k, matched in enumerate(_paired(by_rank, self._complete)):
                names = {e.name for e in matched.values()}
                if len(names) != 1 or any(e.error or e.end is None for e in matched.values()):
                    continue  # mismatched or failed calls order nothing the model can vouch for
                op = ops.BY_NAME.get(names.pop())
                if op is None:
                    continue
                if self.backend == "gloo" and op.name in ops.GLOO_EMPTY_RETURNS and _all_empty(matched.values()):
                    continue  # gloo returns at once from an all_reduce or all_gather of empty tensors
                column = op.gloo if self.backend == "gloo" else op.nccl
                forms = self.backend == "nccl" and not self.formed and k == 0
                root = self._root(matched)
                for rank, e in matched.items():
                    role = ops.ANY if op.roles == (ops.ANY,) else ops.ROOT if rank == root else ops.NON_ROOT
                    word = "all" if forms else column.get(role)
                    # forming the communicator happens inside the call, before an async call returns its handle
                    released = self.leave(rank, e) if forms else self._released(rank, e, waits[rank])
                    if released is None:
                        continue
                    if word == "all" and op.name == "broadcast_object_list" and self.backend == "gloo" and not forms:
                        # two broadcasts in a row hold the root for two levels of gloo's tree: every rank at 4
                        # members, not the deeper ones at 8 (attack12 r1: rank 7 entered after the root left)
                        members = e.group_ranks or sorted(self.events)
                        near = _broadcast_children(rank, root, members)
                        near += [c for child in near for c in _broadcast_children(child, root, members)]
                        for other in near:
                            if other in matched:
                                self._edge(self.enter(other, matched[other]), released)
                    elif word == "all":
                        for other, o in matched.items():
                            self._edge(self.enter(other, o), released)
                    elif op.name == "broadcast" and self.backend == "gloo" and word in ("parent", "children"):
                        members = e.group_ranks or sorted(self.events)
                        for other in _broadcast_parents(rank, root, members) + _broadcast_children(rank, root, members):
                            if other in matched:
                                self._edge(self.enter(other, matched[other]), released)
                    elif word in ("root", "parent") and root in matched and root != rank:
                        self._edge(self.enter(root, matched[root]), released)

    def _root(self, matched: dict) -> int | None:
        """The root the matched calls name (:func:`ops.root_of`: as given, or the op's default)."""
        for e in matched.values():
            root = ops.root_of(e)
            if root is not None:
                return root
        return None

    def _point_to_point(self) -> None:
        sends, recvs = point_to_point_calls(self.events)
        waits = {rank: self._waits_of(rank) for rank in self.events}
        for (a, b, group, tag), sent in sends.items():
            for s, r in zip(sent, recvs.get((a, b, group, tag), [])):
                column_s = _column(_ASYNC_P2P.get(s.name, s.name), self.backend)
                column_r = _column(_ASYNC_P2P.get(r.name, r.name), self.backend)
                released_r = self._released(b, r, waits[b])
                if released_r is not None and column_r.get(ops.RECEIVER) == "peer":
                    self._edge(self.enter(a, s), released_r)
                released_s = self._released(a, s, waits[a])
                if released_s is not None and column_s.get(ops.SENDER) == "peer":
                    self._edge(self.enter(b, r), released_s)

    def _store(self) -> None:
        """Store keys: each key's calls, linked by :meth:`_key_exists` and :meth:`_counter` (each sorts the key's
        calls once and answers every read by binary search: a counter added to each step costs no pairwise
        scan, attack11 a26)."""
        calls: dict[str, list] = {}
        for rank, events in self.events.items():
            for e in events:
                if e.kind != "store" or e.error or not e.keys:
                    continue
                for key in dict.fromkeys(e.keys if e.name in _ALL_KEYS else e.keys[:1]):
                    calls.setdefault(key, []).append((rank, e))
        for mine in calls.values():
            mine.sort(key=lambda item: (item[1].start, item[0]))
            counter = _Counter(mine, self._complete)
            for rank, e in mine:
                if e.end is None:
                    continue
                count = _count(e.value) if e.name in ("get", "add") else None
                if count is not None and counter.adds:
                    for a_rank, a in counter.before(rank, e, count):
                        self._edge(self.enter(a_rank, a), self.leave(rank, e))
            self._key_exists(mine, counter)
            self._appended_and_pushed(mine)

    def _appended_and_pushed(self, calls: list) -> None:
        """What a key's ``append``s and ``queue_push``es order beyond its first write (attack20 a18: a rank that
        read every rank's file once a ``get`` showed every rank's append, or once it had popped every rank's push,
        was ordered after the first writer only, and the others' files were races). A ``get`` whose value is the
        whole of every append that began before it returned (a key only appended to, the value known whole) came
        after each of them; a ``queue_pop`` that returned a value exactly one push of the key wrote came after that
        push."""
        appends = [(rank, e) for rank, e in calls if e.name == "append"]
        others = any(e.name in ("set", "add", "compare_set", "multi_set", "delete_key") for _, e in calls)
        if appends and not others and all(e.written is not None for _, e in appends):
            for rank, e in calls:
                if e.name != "get" or e.end is None or e.value is None or len(e.value) >= _VALUE_KEPT:
                    continue
                began = [(r, a) for r, a in appends if a.start < e.end]
                if began and len(e.value) == sum(len(a.written) for _, a in began):
                    if all(a.written in e.value for _, a in began):
                        for r, a in began:
                            self._edge(self.enter(r, a), self.leave(rank, e))
        pushes = [(rank, e) for rank, e in calls if e.name == "queue_push" and e.written is not None]
        for rank, e in calls:
            if e.name != "queue_pop" or e.end is None or e.value is None or len(e.value) >= _VALUE_KEPT:
                continue
            found = [(r, p) for r, p in pushes if p.written == e.value and p.start < e.end]
            if len(found) == 1:
                self._edge(self.enter(*found[0]), self.leave(rank, e))

    def _key_exists(self, calls: list, counter: _Counter) -> None:
        """A ``wait``, a ``get`` (of no counter) or a ``check`` that said True returned once the key existed: after
        the first ``set``/``add``/``compare_set`` of it that began before it returned and was not deleted before
        it, by a ``delete_key`` that certainly came between (the writer's reply before the delete's call, the
        delete's reply before the read's: a key reused each step is the last step's, attack11 a03). A writer
        that was the only one a read could have seen was applied by that read's return."""
        writers = [(rank, e) for rank, e in calls if e.name in KEY_WRITERS and _wrote(e)]
        if not writers:
            return
        # when each writer was certainly applied by (its reply, or the return of a read only it could satisfy)
        applied = [math.inf if e.end is None else e.end for _, e in writers]
        deletes = sorted((e.end, e.start) for _, e in calls if e.name == "delete_key" and e.end is not None)
        delete_ends = [end for end, _ in deletes]
        latest_start, last = [], -math.inf  # the latest start of the deletes that ended by each
        for _, start in deletes:
            last = max(last, start)
            latest_start.append(last)
        first = 0  # writers before it are dead for every read from here on (reads go by their start)
        for rank, e in calls:
            if e.name == "compare_set" and e.end is not None and e.value is not None and e.value != e.written:
                # a compare_set that did not write returned what was there: a read of the write that put it
                # there (a status key polled with compare_set: attack18 a04)
                read = _value_read(e, writers)
                if read is not None and read[1] is not e:
                    self._edge(self.enter(*read), self.leave(rank, e))
                continue
            if e.end is None or not (
                (e.name in KEY_WAITS and e.name != "get")
                or (e.name == "get" and not (counter.adds and _count(e.value) is not None))
                or (e.name == "check" and e.value == "True")
            ):
                continue
            read = _value_read(e, writers)
            if read is not None:  # the one set that wrote what this get returned (attack12 r6: a status key)
                self._edge(self.enter(*read), self.leave(rank, e))
            k = bisect.bisect_left(delete_ends, e.start)
            dead_by = latest_start[k - 1] if k else -math.inf  # a writer applied before this start is gone
            while first < len(writers) and applied[first] < dead_by:
                first += 1
            if first == len(writers):
                continue
            if writers[first][1].start >= e.end and (
                writers[first][0] == rank or writers[first][1].start - e.end > CLOCK_SKEW or k
            ):
                # no write of the key began before this read returned: the read saw a write the record does not
                # show. Within CLOCK_SKEW, on another rank and with no delete before, the first write is the
                # one it saw: ranks of other machines are placed through their wall clocks (attack20 a08)
                continue
            w_rank, w = writers[first]
            self._edge(self.enter(w_rank, w), self.leave(rank, e))
            later = writers[first + 1] if first + 1 < len(writers) else None
            if later is None or later[1].start >= e.end:  # the only writer it could have seen
                applied[first] = min(applied[first], e.end)

    def _published(self) -> None:
        """A file published whole by a rename (``os.replace(tmp, path)``) and waited for: a rank that looked for
        the path and missed it (``os.path.exists``/``isfile``, ``Path.exists``/``is_file`` false, or an ``open``
        that found no file), then found it, found what that rename made, if the rename is the only way the path
        came to be in the run (no rank opened it for writing or appending, renamed another file onto it, or
        removed it or renamed it away). The find comes after the rename. A file written in place gets no such
        edge for what it holds (a reader that finds it may read it half-written), but a look (``exists``,
        ``isdir``, ``os.stat``...) that finds a path one open for writing or one ``os.mkdir`` made comes after
        that call began: a marker (an empty ``DONE`` file, a folder) orders what its maker did before it — for a
        file, only when the thread that found it does not open it (whose content it waited for is a file written in
        place: the open that made it orders nothing of what is written after it; nb01's polling answer), or when
        it found it by an open retried at one line (a marker read until it says "ok": what the maker did before
        making it comes first, while the marker's own content still races its write; attack26 a09)."""
        made: dict[str, list] = {}  # path -> (rank, the event that made it, whether it was made whole)
        gone: dict[str, list] = {}  # path -> (rank, the event) of each removal or rename away of it
        for rank, events in self.events.items():
            for e in events:
                if e.kind != "file" or not e.path:
                    continue
                if e.name == "rename":
                    gone.setdefault(e.path, []).append((rank, e))
                    if e.to:
                        made.setdefault(e.to, []).append((rank, e, True))
                elif e.name in ("write", "append", "mkdir"):  # a link (os.symlink, os.link) is made whole at once
                    made.setdefault(e.path, []).append((rank, e, e.name == "write" and e.value == "link"))
                elif e.name == "remove":
                    gone.setdefault(e.path, []).append((rank, e))
        for rank, events in self.events.items():
            missed: dict[tuple, int | None] = {}  # (lane, path) -> the line of the last miss: each thread's own
            # (lane, path) a thread opened: a file it reads is not a marker, its content is what it waited for
            opened = {(e.lane, e.path) for e in events if e.kind == "file" and e.name != "exists" and e.path}
            for e in events:
                if e.kind != "file" or e.name not in ("exists", "read") or not e.path:
                    continue
                key = (e.lane, e.path)
                if found_no_file(e):
                    missed[key] = e.line
                    continue
                if key not in missed:
                    continue
                missed_at = missed.pop(key)
                by = made.get(e.path, [])
                if len(by) != 1 or by[0][0] == rank:
                    continue
                maker_rank, maker, whole = by[0]
                # a removal after the find (the clean-up once every rank has loaded it) does not change what it
                # found (attack18 a10), nor one the maker's thread made before it made the path (an earlier
                # job's file cleared first: attack22 a01, a02)
                if any(
                    r.start < e.start and not (g_rank == maker_rank and r.lane == maker.lane and r.start < maker.start)
                    for g_rank, r in gone.get(e.path, ())
                ):
                    continue
                if whole:
                    self._edge(self.leave(maker_rank, maker), self.enter(rank, e))
                    self._waited_for.add((rank, e.lane, e.path))
                    self._waited_in(rank, e)
                elif (
                    e.name == "exists" and (maker.name == "mkdir" or (maker.name == "write" and key not in opened))
                ) or (e.name == "read" and maker.name == "write" and e.line is not None and e.line == missed_at):
                    # a marker (an empty DONE file, a folder made with os.mkdir, a file read until it says "ok"):
                    # once a rank finds it, the call that created it had begun, so all that rank did before it
                    # comes first (attack14 a02; attack26 a09 for a marker found by reading it: an open retried at
                    # one line until it found the file, not a miss and a later read elsewhere); what the file
                    # holds is not handed over: a read of it still races its write
                    self._edge(self.enter(maker_rank, maker), self.enter(rank, e))
                    self._waited_for.add((rank, e.lane, e.path))  # its misses and its find were the wait
                    self._waited_in(rank, e)

    def _waited_in(self, rank: int, find) -> None:
        """``find`` ended a wait for its path: this thread's listings of the path's folder up to it were part of
        that wait (a poll through ``os.listdir``/``glob``), not reads of the folder that race what others put
        there meanwhile (attack18 a02: every poll was a race with the temporary file's creation)."""
        key = (rank, find.lane, os.path.dirname(find.path))
        self._waited_dirs[key] = max(self._waited_dirs.get(key, find.start), find.start)

    def _held(self) -> None:
        """Files kept open across a synchronising call (the recorder's "held" events, written once the file was
        found closed, ``of`` its open): the access through that open ends at its last "held" event, and a read
        that had read nothing yet (value "unused") begins at that mark, not at its open: a log opened before a
        barrier and read after it is read after it (attack15 a11), while bytes written through a file kept
        open past a barrier may land after it (a03). Each mark belongs to one open (attack17 a01: a write closed
        before the barrier was stretched to a later open's mark of the same path)."""
        for events in self.events.values():
            by_id = {e.id: e for e in events if e.kind == "file" and e.name != "held" and e.id is not None}
            for e in events:
                if e.kind != "file" or e.name != "held" or e.of is None:
                    continue
                opening = by_id.get(e.of)
                if opening is None or opening.name not in ("read", "write", "append"):
                    continue
                if e.value == "unused":
                    if opening.name == "read" and id(opening) not in self._at:
                        self._at[id(opening)] = e
                    self._until.setdefault(id(opening), e)
                else:
                    self._until[id(opening)] = e

    def _locks(self) -> None:
        """File locks (``fcntl.flock``/``lockf``; ``filelock.FileLock`` on Linux): an exclusive hold excludes every
        other hold of the same file (device and inode), a shared one the exclusive ones. Of two such holds on two
        ranks, the one taken first (its "lock" event, recorded once the lock was granted, began first) was released
        before the other was granted: its "unlock" (entered before the release) is ordered before the other's
        "lock". A lock released by closing its descriptor has an "unlock" the recorder writes at the holding
        thread's last event seen inside the hold (``call`` "close"). A hold whose release is not recorded (the
        release failed, a lock taken again on the same descriptor) orders nothing after it. A file whose recorded holds overlap in time (one
        began before an excluded one's release) is not taken as locked at all: something (a descriptor shared
        with a forked child, a filesystem without locks) did not exclude them. The opens of the locked file made
        by the same thread just before it locks it (no other call between) are taken inside the hold
        (:attr:`Access.at`), unless they truncated a file some rank reads."""
        holds: dict[str, list[tuple[int, object, object]]] = {}  # inode -> (rank, lock, unlock or None)
        # files some rank reads: a truncating open of one stays outside the hold (it may clear what a holder wrote
        # for a reader); of a file nobody reads (``open("x.lock", "w")`` then ``flock``: attack19 a09) it is in it
        read = {e.path for events in self.events.values() for e in events if e.kind == "file" and e.name == "read"}
        for rank, events in self.events.items():
            held: dict[tuple, object] = {}  # (lane, fd) -> the lock event of a hold not yet released
            opened: dict = {}  # lane -> {path: opens since the lane's last call that was not a file access}
            for e in events:
                if e.kind == "file":
                    if (
                        e.name == "read"
                        or (e.name == "write" and e.value in ("update", EXCLUSIVE))  # keeps (or makes) the file
                        or (e.name == "write" and e.value is None and e.path not in read)
                    ):
                        opened.setdefault(e.lane, {}).setdefault(e.path, []).append(e)
                    continue
                window = opened.pop(e.lane, {})
                if e.kind != "sync" or e.name not in ("lock", "unlock") or e.fd is None or not e.inode:
                    continue
                key = (e.lane, e.fd)
                if e.name == "lock":
                    for opening in window.get(e.path, ()):
                        self._at[id(opening)] = e
                    before = held.pop(key, None)
                    if before is not None:
                        holds.setdefault(before.inode, []).append((rank, before, None))
                    held[key] = e
                    continue
                before = held.pop(key, None)
                if before is not None:
                    released = e.error is None and e.end is not None and e.inode == before.inode
                    holds.setdefault(before.inode, []).append((rank, before, e if released else None))
            for before in held.values():
                holds.setdefault(before.inode, []).append((rank, before, None))
        for found in holds.values():
            if len({rank for rank, _, _ in found}) < 2:
                continue
            found.sort(key=lambda hold: (hold[1].start, hold[0]))
            released_any, released_exclusive = -math.inf, -math.inf  # the latest release begun, of earlier holds
            for _, lock, unlock in found:
                exclusive = lock.value == "exclusive"
                if (released_any if exclusive else released_exclusive) >= lock.start:
                    break  # an earlier hold it excludes was released after it was granted: no exclusion
                if unlock is not None:
                    released_any = max(released_any, unlock.start)
                    if exclusive:
                        released_exclusive = max(released_exclusive, unlock.start)
            else:
                latest_any: dict[tuple, tuple] = {}  # (rank, lane) -> (rank, unlock) of its latest released hold
                latest_exclusive: dict[tuple, tuple] = {}
                for rank, lock, unlock in found:
                    exclusive = lock.value == "exclusive"
                    for a_rank, a_unlock in (latest_any if exclusive else latest_exclusive).values():
                        if a_rank != rank:
                            self._edge(self.enter(a_rank, a_unlock), self.enter(rank, lock))
                    if unlock is not None:
                        latest_any[(rank, lock.lane)] = (rank, unlock)
                        if exclusive:
                            latest_exclusive[(rank, lock.lane)] = (rank, unlock)

    # --- queries
    def _successors(self, point: tuple[int, int]):
        rank, index = point
        if index % 2 == 0:
            yield (rank, index + 1)
        else:
            following = self._next[rank][index // 2]
            if following is not None:
                yield (rank, 2 * following)
        yield from self.edges.get(point, ())
        if self.lane_edges:
            yield from self.lane_edges.get(point, ())
        if self.torch_edges:
            yield from self.torch_edges.get(point, ())

    def reachable(self, point: tuple[int, int]) -> set[tuple[int, int]]:
        """Every point ``point`` happens before (on other ranks: the earliest of each rank is enough)."""
        found = self._reach.get(point)
        if found is None:
            found, queue = {point}, deque([point])
            while queue:
                for nxt in self._successors(queue.popleft()):
                    if nxt not in found:
                        found.add(nxt)
                        queue.append(nxt)
            self._reach[point] = found
        return found

    def _clocks(self) -> dict[tuple[int, int], list[int]]:
        """A vector clock per point: for each rank's chain of lanes (:meth:`_lane_columns`; one per rank when it
        ran no thread or child), the last of its points that happens before this one (or is it), -1 for none — so a query is one comparison instead of a search (a run with thousands of file
        accesses asks millions). Points on a cycle of edges (none if the model is sound) get no clock: queries
        about them search."""
        if self._vc is not None:
            return self._vc
        column = self._lane_columns()
        waiting: dict[tuple[int, int], int] = {}
        for rank, events in self.events.items():
            first = self._first_in_lane[rank]
            for index in range(2 * len(events)):
                if index % 2 or not first[index // 2]:
                    waiting[(rank, index)] = 1  # its predecessor in program order
        for edges in (self.edges, self.lane_edges, self.torch_edges):
            for targets in edges.values():
                for b in targets:
                    waiting[b] = waiting.get(b, 0) + 1
        clocks: dict[tuple[int, int], list[int]] = {}
        ready = deque(
            (rank, 2 * i)
            for rank, events in self.events.items()
            for i in range(len(events))
            if self._first_in_lane[rank][i] and not waiting.get((rank, 2 * i))
        )
        width = max(column.values()) + 1
        for point in ready:
            clocks[point] = [-1] * width
        while ready:
            point = ready.popleft()
            clock = clocks[point]
            clock[column[(point[0], self.lane_of(point))]] = point[1]
            for nxt in self._successors(point):
                mine = clocks.get(nxt)
                if mine is None:
                    clocks[nxt] = list(clock)
                else:
                    for i, value in enumerate(clock):
                        if value > mine[i]:
                            mine[i] = value
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
        self._vc = {point: clock for point, clock in clocks.items() if not waiting.get(point)}
        self._column = column
        return self._vc

    def _lane_columns(self) -> dict[tuple, int]:
        """A column of the vector clocks per chain of lanes: the rank's own thread, and its other lanes, one after
        another where each ended (was joined) before the next was started by the same lane (a thread or a data
        worker per step: one column, not thousands). The points of a chain are ordered, and their indices grow
        along it, so the latest of them that happens before a point is one number."""
        column: dict[tuple, int] = {}
        count = 0
        for rank, lanes in self._lane.items():
            column[(rank, None)] = count
            count += 1
            tails: list[list] = []  # [column, the chain's last lane], most recent first
            for lane in dict.fromkeys(lanes):
                if lane is None:
                    continue
                started = self._started.get((rank, lane))
                for tail in tails[:8] if started is not None else ():
                    joined = self._joined.get((rank, tail[1]))
                    if joined is not None and joined[0] == started[0] and joined[1] < started[1]:
                        column[(rank, lane)] = tail[0]
                        tail[1] = lane
                        tails.remove(tail)
                        tails.insert(0, tail)
                        break
                else:
                    column[(rank, lane)] = count
                    tails.insert(0, [count, lane])
                    count += 1
        return column

    def before(self, a: tuple[int, int], b: tuple[int, int]) -> bool:
        """Point ``a`` happens before point ``b``."""
        if a[0] == b[0] and self.lane_of(a) == self.lane_of(b):
            return a[1] < b[1]
        clock = self._clocks().get(b)
        if clock is not None and a in self._vc:
            return clock[self._column[(a[0], self.lane_of(a))]] >= a[1]
        return b in self.reachable(a)

    def ordered(self, rank_a: int, event_a, rank_b: int, event_b) -> bool:
        """``event_a`` (on ``rank_a``) ended before ``event_b`` (on ``rank_b``) began."""
        return self.before(self.leave(rank_a, event_a), self.enter(rank_b, event_b))

    def access_enter(self, access: Access) -> tuple[int, int]:
        """Where ``access`` begins in its rank's order (inside a lock's hold for a lock file's open)."""
        return self.enter(access.rank, access.at or access.event)

    def access_leave(self, access: Access) -> tuple[int, int]:
        return self.leave(access.rank, access.until or access.at or access.event)

    def ordered_at(self, rank_a: int, time_a: float, rank_b: int, time_b: float) -> bool:
        """What ``rank_a`` did up to ``time_a`` happens before what ``rank_b`` does from ``time_b`` on: a path of
        edges runs from a point of ``rank_a`` at or after ``time_a`` to a point of ``rank_b`` at or before
        ``time_b`` (times in seconds of the run, as events and spans carry them; a span's end and start say
        where a phase sits in its rank's program order)."""
        if rank_a == rank_b:
            return time_a <= time_b
        events = self.events[rank_a]
        lanes_a, lanes_b = self._lane[rank_a], self._lane[rank_b]  # the ranks' own threads: their programs
        start = next(
            (
                (rank_a, 2 * i + side)
                for i, e in enumerate(events)
                if lanes_a[i] is None
                for side, t in ((0, e.start), (1, e.end if e.end is not None else e.start))
                if t >= time_a
            ),
            None,
        )
        if start is None:
            return False
        return any(
            self.before(start, (rank_b, index))
            for index in range(2 * len(self.events[rank_b]))
            if lanes_b[index // 2] is None and self._time((rank_b, index)) <= time_b
        )

    def _time(self, point: tuple[int, int]) -> float:
        e = self.events[point[0]][point[1] // 2]
        return e.start if point[1] % 2 == 0 or e.end is None else e.end

    def edges_into(self, rank: int):
        """(from point, to point) of every edge that ends on ``rank``: whom ``rank`` waited for, and where."""
        for a, targets in self.edges.items():
            for b in targets:
                if b[0] == rank:
                    yield a, b

    def event_at(self, point: tuple[int, int]):
        return self.events[point[0]][point[1] // 2]

    def accesses(self) -> list[Access]:
        found = []
        for rank, events in self.events.items():
            for e in events:
                if e.kind != "file" or not e.path or e.name in ("exists", "held"):  # a look hands over nothing
                    continue
                if getattr(e, "call", None) in _COLLECTIVE_FILE_CALLS:
                    continue  # DCP's own file accesses inside the call are recorded one by one (attack24 a02)
                if (rank, e.lane, e.path) in self._waited_for and found_no_file(e):
                    continue  # a miss of a rank that then found the published file: part of its wait, read nothing
                if e.name == "list" and e.start <= self._waited_dirs.get((rank, e.lane, e.path), -1.0):
                    continue  # a listing polled until a file appeared: part of that wait
                until = self._until.get(id(e))
                if e.name == "read" and getattr(e, "value", None) == "mmap":
                    until = self._last_in_lane(rank, e) or until  # read whenever its tensors are used (attack18 a05)
                found.append(Access(rank, e.name, e.path, e, self._at.get(id(e)), until))
                if e.name == "rename" and e.to:
                    found.append(Access(rank, "write", e.to, e))
        return found + self._moved_while_open(found)

    @staticmethod
    def _moved_while_open(found: list[Access]) -> list[Access]:
        """A file renamed while its rank kept it open for writing (``f = open(tmp, "w")``, ``os.replace(tmp,
        path)``, a barrier, then ``f.write``): what is written through it after the rename lands in the new name,
        so the write is also an access of that name, from the rename to the last call it was seen open past
        (attack17 a14)."""
        held = [a for a in found if a.until is not None and a.how in ("write", "append")]
        if not held:
            return []
        moved = []
        for rename in found:
            e = rename.event
            if rename.how != "rename" or not e.to:
                continue
            for access in held:
                if (
                    access.rank == rename.rank
                    and access.path == rename.path
                    and access.event.start <= e.start
                    and access.until.start > e.start
                ):
                    moved.append(Access(access.rank, access.how, e.to, access.event, e, access.until))
        return moved

    def path(self, a: tuple[int, int], b: tuple[int, int]) -> list[tuple[int, int]] | None:
        """One shortest chain of points from ``a`` to ``b`` (program order and edges), or None if ``a`` does not
        happen before ``b``: the calls that order them."""
        if not self.before(a, b) and a != b:
            return None
        parent: dict[tuple[int, int], tuple[int, int] | None] = {a: None}
        queue = deque([a])
        while queue:
            point = queue.popleft()
            if point == b:
                break
            for nxt in self._successors(point):
                if nxt not in parent:
                    parent[nxt] = point
                    queue.append(nxt)
        chain, point = [], b
        while point is not None:
            chain.append(point)
            point = parent[point]
        return chain[::-1]

    def time(self, point: tuple[int, int]) -> float:
        """When ``point`` happened, by the run's clock: its event's start (enter) or end (leave)."""
        return self._time(point)

    def _by_path(self) -> list[list[Access]]:
        """The accesses of each path; a folder's listing counts as an access of each of its entries (it reads
        which entries there are: it conflicts with their creation and removal)."""
        by_path: dict[str, list[Access]] = {}
        listed: list[Access] = []
        for access in self.accesses():
            by_path.setdefault(access.path, []).append(access)
            if access.how == "list":
                listed.append(access)
        entries: dict[str, list[str]] = {}  # folder -> the paths in it (grouped once: a listing per write
        for path in by_path:  # of a shared folder made this quadratic, compared by value, attack10 a10)
            entries.setdefault(os.path.dirname(path), []).append(path)
        for folder in listed:
            for path in entries.get(folder.path, ()):
                if path != folder.path:  # the root folder is its own dirname: its listing is already its access
                    by_path[path].append(folder)
        made = [a for a in self.accesses() if a.how == "mkdir"]
        for folder in made:  # a folder made is needed by every path inside it
            for path, accesses in by_path.items():
                if _inside(path, folder.path):
                    accesses.append(folder)
        # a folder renamed into place (or away) changes every path inside it: a checkpoint written in ckpt.tmp/
        # and published by os.replace(ckpt.tmp, ckpt) (attack12 r8)
        renamed = [a for a in self.accesses() if a.event.name == "rename" and a.how in ("write", "rename")]
        # and a folder removed (shutil.rmtree) takes every path inside it with it: a rank that writes into it,
        # even one that made sure of it first (makedirs(exist_ok=True)), races with the removal unless ordered
        # (attack18 a09: a fresh output folder made by rank 0 while the others write their shards into it)
        changed = renamed + [a for a in self.accesses() if a.how == "remove"]
        if changed:
            below: dict[str, list[str]] = {}  # folder -> the paths somewhere inside it
            for path in by_path:
                folder = os.path.dirname(path)
                while folder and folder != os.path.dirname(folder):
                    below.setdefault(folder, []).append(path)
                    folder = os.path.dirname(folder)
            for moved in changed:
                for path in below.get(moved.path, ()):
                    by_path[path].append(moved)
        return list(by_path.values())

    @cached_property
    def _made(self) -> dict[int, list[tuple[str, tuple[int, int]]]]:
        """Each rank's folders made, with the point where it had made them."""
        found: dict[int, list[tuple[str, tuple[int, int]]]] = {}
        for access in self.accesses():
            if access.how in ("mkdir", "ensure"):
                found.setdefault(access.rank, []).append((access.path, self.access_leave(access)))
        return found

    def _made_itself(self, access: Access) -> bool:
        """Whether ``access``'s rank made the folder of its path (or one around it) before it (in its order: the
        same thread earlier, or one ordered before it): it needs no other rank's folder then (``makedirs`` checks
        the folders around before it makes one)."""
        at = self.access_enter(access)
        path = access.path
        return any(
            (path == folder or _inside(path, folder)) and self.before(made, at)
            for folder, made in self._made.get(access.rank, ())
        )

    def _last_in_lane(self, rank: int, event):
        """The last event of ``event``'s lane on ``rank`` after it (None: it is the last)."""
        lane = getattr(event, "lane", None)
        last = None
        for later in reversed(self.events[rank]):
            if later is event:
                return last
            if getattr(later, "lane", None) == lane and last is None:
                last = later
        return None

    def _conflict(self, a: Access, b: Access) -> bool:
        if not _conflict(a.how, b.how):
            return False
        if _mapped_past(a, b) or _mapped_past(b, a):
            return False
        if _exclusive_pair(a, b):
            return False
        made, used = (a, b) if a.how == "mkdir" else (b, a)
        if made.how == "mkdir" and _inside(used.path, made.path):  # a folder against a path inside it
            return not self._made_itself(used)
        return True

    def _conflicting(self):
        """Every pair of accesses of one path on two ranks, one of them changing it."""
        for accesses in self._by_path():
            for i, a in enumerate(accesses):
                for b in accesses[i + 1 :]:
                    if a.rank != b.rank and self._conflict(a, b):
                        yield a, b

    def races(self) -> list[Race]:
        """Every pair of accesses of one path on two ranks, one of them changing it, ordered neither way.

        For a change ``a`` and the accesses of another rank in program order, those ``a`` happens before are a
        suffix and those that happen before ``a`` a prefix: only the accesses between are unordered with it,
        found by two binary searches (a training loop's thousands of ordered accesses cost no pairwise test)."""
        found: list[Race] = []
        seen: set = set()
        cut = False
        undecided = 0
        for accesses in self._by_path():
            if cut:
                break
            by_lane: dict[tuple, list[Access]] = {}  # each thread's accesses are in its program order
            for access in accesses:
                by_lane.setdefault((access.rank, getattr(access.event, "lane", None)), []).append(access)
            for mine in by_lane.values():
                mine.sort(key=lambda access: self.access_enter(access)[1])
            for a in accesses:
                if a.how not in _CHANGES:
                    continue
                enter_a, leave_a = self.access_enter(a), self.access_leave(a)
                for (rank, _), others in by_lane.items():
                    if rank == a.rank:
                        continue
                    # the first access a happens before, and the first that does not happen before a
                    after = _first(others, lambda b, x=leave_a: self.before(x, self.access_enter(b)))
                    before = _first(others[:after], lambda b, x=enter_a: not self.before(self.access_leave(b), x))
                    for b in others[before:after]:
                        pair = (id(a), id(b)) if id(a) < id(b) else (id(b), id(a))
                        if not self._conflict(a, b) or pair in seen:
                            continue
                        seen.add(pair)
                        first, second = (a, b) if a.event.start <= b.event.start else (b, a)
                        if second.event.start < max(self.flight_blind.get(r, -math.inf) for r in (a.rank, b.rank)):
                            undecided += 1  # a DDP all_reduce older than the flight record may order them
                            continue
                        gone = _gone_before(second, accesses)
                        found.append(Race(first, second, self.backend, self.origin, gone))
                        if len(found) > MAX_RACES:
                            cut = True
                            break
                    if cut:
                        break
                if cut:
                    break
        if not cut:
            found.extend(self._look_races())
            cut = len(found) > MAX_RACES
        listed = Races(sorted(found[:MAX_RACES], key=lambda race: race.second.event.start))
        listed.cut = cut
        listed.undecided = undecided
        return listed

    def _looks(self) -> list[Access]:
        """The looks (``os.path.exists``/``isfile``, ``Path.exists``/``is_file``) whose answer is all the rank took
        from the path: its thread made no later access of the path (a read or write after a look is ordered, or
        races, by itself), and the look was not part of a wait for a file published by a rename."""
        found = []
        for rank, events in self.events.items():
            used: set[tuple] = set()  # (lane, path) the thread accessed after (the events read backwards)
            for e in reversed(events):
                if e.kind != "file" or not e.path:
                    continue
                if e.name != "exists":
                    used.add((e.lane, e.path))
                    if e.name == "rename" and e.to:
                        used.add((e.lane, e.to))
                elif (e.lane, e.path) not in used and (rank, e.lane, e.path) not in self._waited_for:
                    found.append(Access(rank, "look", e.path, e))
        return found

    def _look_races(self) -> list[Race]:
        """A look that nothing orders against another rank's write, removal, rename or making of the same path:
        what it found (a checkpoint to resume from, a "done" flag, a cache) depends on timing alone."""
        looks = self._looks()
        if not looks:
            return []
        changes: dict[str, list[Access]] = {}
        for access in self.accesses():
            if access.how in ("write", "remove", "rename", "mkdir"):
                changes.setdefault(access.path, []).append(access)
        found = []
        for look in looks:
            for change in changes.get(look.path, ()):
                if change.rank == look.rank or _exclusive_pair(look, change):
                    continue
                if self.before(self.access_leave(change), self.access_enter(look)) or self.before(
                    self.access_leave(look), self.access_enter(change)
                ):
                    continue
                first, second = (look, change) if look.event.start <= change.event.start else (change, look)
                found.append(Race(first, second, self.backend, self.origin, _gone_before(second, changes[look.path])))
        return found

    def handoff_count(self) -> int:
        """How many pairs :meth:`handoffs` would list, counted without listing them: conflicting pairs (counted
        per rank and kind of access) less those of them that raced or were not judged. A look's races are not
        taken off: a look is no access of :meth:`accesses`, so it was never counted (review86d C2: a write and
        three unordered looks gave -3)."""
        total = 0
        for accesses in self._by_path():
            folders = any(access.how == "mkdir" for access in accesses)
            kinds: dict[tuple, int] = {}
            for access in accesses:
                # against a folder made around it, an access of a rank that made that folder itself needs no order
                own = folders and access.how != "mkdir" and self._made_itself(access)
                kind = (access.rank, access.how, access.path, own)
                kinds[kind] = kinds.get(kind, 0) + 1
            items = list(kinds.items())
            for i, ((rank_a, how_a, path_a, own_a), n_a) in enumerate(items):
                for (rank_b, how_b, path_b, own_b), n_b in items[i + 1 :]:
                    if rank_a == rank_b or not _conflict(how_a, how_b):
                        continue
                    made, used = ((path_a, path_b), own_b) if how_a == "mkdir" else ((path_b, path_a), own_a)
                    if "mkdir" in (how_a, how_b) and _inside(made[1], made[0]) and used:
                        continue
                    total += n_a * n_b
        found = self.races()
        counted = [race for race in found if "look" not in (race.first.how, race.second.how)]
        return total - len(counted) - getattr(found, "undecided", 0)

    def handoffs(self) -> list[Handoff]:
        """Every pair of conflicting accesses on two ranks that the model orders, earlier first (each
        :class:`Handoff` finds the chain that orders it when asked: what a timeline draws)."""
        found = []
        for a, b in self._conflicting():
            if self.before(self.access_leave(a), self.access_enter(b)):
                found.append(Handoff(a, b, self))
            elif self.before(self.access_leave(b), self.access_enter(a)):
                found.append(Handoff(b, a, self))
        return sorted(found, key=lambda h: h.second.event.start)


def _paired(by_rank: dict[int, list], complete: bool) -> list[dict]:
    """One group's collectives matched across ranks, in the group's order: each a dict rank -> that rank's call at
    that position. Positions are the ones the recorder wrote (``pos``), right even where the middle of a long
    record was not kept; a record without them (written by an older recorder) pairs by index, and only when no
    record was cut: after a cut, index k of one rank is not index k of another (attack11 a20)."""
    if all(e.pos is not None for v in by_rank.values() for e in v):
        at: dict[int, dict] = {}
        for rank, v in by_rank.items():
            for e in v:
                at.setdefault(e.pos, {})[rank] = e
        return [at[position] for position in sorted(at)]
    if not complete:
        return []
    return [
        {rank: v[k] for rank, v in by_rank.items() if len(v) > k} for k in range(max(len(v) for v in by_rank.values()))
    ]


#: The longest store value a rank's record keeps whole (``record.STORE_VALUE_KEPT``: a longer one is cut).
_VALUE_KEPT = 64

#: How far the wall clocks of two machines may disagree (seconds) for the model still to take a store key's first
#: write, begun that much after another rank's read of the key returned, as the write the read saw (the read found
#: the key, and no earlier write is recorded). docs/torchrun.md: "as good as the nodes' NTP sync, typically a
#: millisecond"; this allows for a badly synchronised pair.
CLOCK_SKEW = 0.25
#: Store calls that make a key exist (``append`` and ``queue_push`` too: a key's first append or push creates it).
KEY_WRITERS = ("set", "add", "compare_set", "multi_set", "append", "queue_push")
#: Store calls that block until their key exists (a ``get`` too, until the store's timeout).
KEY_WAITS = ("wait", "get", "multi_get", "queue_pop")
#: Store calls that name several keys, each of them written or waited for.
_ALL_KEYS = ("wait", "check", "multi_set", "multi_get")


def _wrote(e) -> bool:
    """A store call that wrote its key: every writer but a ``compare_set`` whose value after it is not the one it
    offered (its expected value did not match: it wrote nothing), or whose success is not known (a value of 64
    characters or more)."""
    if e.name != "compare_set":
        return True
    return e.written is not None and e.value == e.written


def _value_read(get, writers: list) -> tuple | None:
    """(rank, event) of the one ``set``/``compare_set`` of the key that wrote the value ``get`` returned and began
    before it returned: the get read that write, so it comes after it (a status key polled until it says
    "ready"). None when the value is not known whole (64 characters or more) or several writes wrote it."""
    value = get.value
    if get.name not in ("get", "compare_set") or value is None or len(value) >= _VALUE_KEPT:
        return None
    found = [(rank, w) for rank, w in writers if w.written == value and w.start < get.end]
    return found[0] if len(found) == 1 else None


def _gone_before(access: Access, accesses: list[Access]) -> bool:
    """``access`` is a read that found no file, and some rank had removed its path or renamed it away before it
    began, by the clock."""
    if access.how not in ("read", "look") or not found_no_file(access.event):
        return False
    start = access.event.start
    return any(
        other.how in ("remove", "rename") and other.event.end is not None and other.event.end <= start
        for other in accesses
    )


def _all_empty(events) -> bool:
    """Every tensor of every call has no elements (a dimension of 0), as recorded."""
    for e in events:
        shapes = e.sizes
        if not shapes or not all(isinstance(s, list) and 0 in s for s in shapes):
            return False
    return True


def _first(items: list, test) -> int:
    """The index of the first item for which ``test`` is true, ``test`` being false then true along ``items``
    (len(items) if it is never true)."""
    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        if test(items[middle]):
            high = middle
        else:
            low = middle + 1
    return low


def polls(events: list) -> set[int]:
    """The ids (``id(event)``) of ``events``' store ``add``s of 0 (reads of a counter) that are part of a poll: the
    same thread's store call just before each read the same key(s) so too. A loop of such reads until the count is
    reached waits for the ranks that add to it, as torch's ``_store_based_barrier`` does (add 1, then
    ``add(key, 0)`` until it is the world size): the exercise checks count it as a wait (attack22 a08, a09), a
    lone ``add`` as none. One pass over a rank's events."""
    found: set[int] = set()
    last: dict = {}  # lane -> that thread's last store call
    for e in events:
        if e.kind != "store":
            continue
        before = last.get(e.lane)
        if (
            e.name == "add"
            and e.amount == 0
            and before is not None
            and before.name == "add"
            and before.amount == 0
            and before.keys == e.keys
        ):
            found.add(id(e))
        last[e.lane] = e
    return found


def _exclusive_pair(a: Access, b: Access) -> bool:
    """Two ranks' exclusive creates of one path (``open(p, "x")``: the write of the one that created it, the look
    of one that found it there): an atomic claim, one rank wins whatever the order (attack22 a04)."""
    return getattr(a.event, "value", None) == EXCLUSIVE and getattr(b.event, "value", None) == EXCLUSIVE


def _mapped_past(read: Access, change: Access) -> bool:
    """A change that leaves a ``torch.load(mmap=True)`` read intact once the load returned: a removal, or a rename
    into place (a new file), keeps the mapped file's data (the mapping holds the old file); only a write into the
    same file changes what its tensors read."""
    if getattr(read.event, "value", None) != "mmap" or read.event.end is None:
        return False
    kept = change.how == "remove" or getattr(change.event, "name", "") == "rename"
    return kept and change.event.start >= read.event.end


def _conflict(a: str, b: str) -> bool:
    if "ensure" in (a, b):
        return False  # a mkdir of a folder already there changed nothing (the rank made sure it is there)
    if a == "mkdir" and b == "mkdir":
        return False  # makedirs(..., exist_ok=True) on several ranks: each made sure the folder is there
    if a == "append" and b == "append":
        return False  # appends from several ranks interleave but lose nothing
    if "append" in (a, b) and "list" in (a, b):
        return False  # an append does not change which entries a folder has (one that creates it is a write)
    return a in _CHANGES or b in _CHANGES


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` lies inside ``folder`` (at any depth)."""
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def _name(path: str) -> str:
    return os.path.basename(path.rstrip(os.sep)) or path


def _count(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _amount(event) -> int:
    """What an ``add`` added: its recorded amount, else 1 (the usual counter)."""
    return 1 if event.amount is None else event.amount


class _Counter:
    """One store key's ``add``s, for what a counter's value proves (:meth:`before`). The key's calls come sorted by
    start; a ``set``, ``compare_set`` or ``delete_key`` leaves the counter at a value of its own (a reset)."""

    def __init__(self, calls: list, complete: bool) -> None:
        self.complete = complete
        self.adds = [(rank, e) for rank, e in calls if e.name == "add"]
        moved = [(rank, e) for rank, e in self.adds if _amount(e) != 0]  # an add of 0 only reads the counter
        self.resets = [(rank, e) for rank, e in calls if e.name in ("set", "compare_set", "delete_key")]
        self.reset_starts = [e.start for _, e in self.resets]
        self.reset_ended = _running_max(math.inf if e.end is None else e.end for _, e in self.resets)
        self.moved = moved
        self.starts = [e.start for _, e in moved]
        self.ended = _running_max(math.inf if e.end is None else e.end for _, e in moved)
        self.up, self.down = [0], [0]  # prefix sums of the positive and the negative amounts
        for _, e in moved:
            amount = _amount(e)
            self.up.append(self.up[-1] + max(amount, 0))
            self.down.append(self.down[-1] + min(amount, 0))
        signs = {_amount(e) > 0 for _, e in moved}
        #: every add moves the counter the same way (+1 or -1), or None: then the values the adds returned are in
        #: the order the store applied them
        self.sign = (1 if signs.pop() else -1) if len(signs) == 1 else None
        self.mine: dict[tuple, list[int]] = {}  # (rank, lane) -> indices into moved, in its program order
        for i, (rank, e) in enumerate(moved):
            self.mine.setdefault((rank, getattr(e, "lane", None)), []).append(i)

    def before(self, rank: int, read, count: int) -> list:
        """The adds that certainly happened before ``read`` (a ``get`` that read ``count``, or an ``add`` that
        returned it), the latest of each rank (program order gives the others).

        The counter's value is the last reset's (0 if none) plus the amounts of the adds the store applied
        since; the adds it could have applied are those that began after that reset ended and before ``read``
        returned. An add is certain when the others could not make up the value without it (their positive
        amounts cannot reach it, or their negative ones cannot bring it down to it: a countdown latch read at 0
        needs every ``add(k, -1)``, attack11 a18); with every amount of one sign, also when it returned a value
        no further from the reset than ``count`` (the counter only moves one way: it came first). Nothing is
        concluded where it could go wrong: a reset that may have overlapped the read or an add, a reset of an
        unknown value, or a value the known adds cannot make (a record whose middle was dropped: then only the
        returned values count, on a key never reset)."""
        k = bisect.bisect_left(self.reset_starts, read.end)  # the resets that began before the read returned
        base, reset_end, next_reset = 0, -math.inf, math.inf
        if k < len(self.resets):
            next_reset = self.reset_starts[k]
        low, high = 0, bisect.bisect_left(self.starts, read.end)  # [low, high): the adds it could have seen
        if k:
            _, reset = self.resets[k - 1]
            if reset.end is None or reset.end >= read.start or (k > 1 and self.reset_ended[k - 2] >= reset.start):
                return []  # which reset the read saw is not certain
            base = 0 if reset.name == "delete_key" else _count(reset.value)
            reset_end = reset.end
            low = bisect.bisect_right(self.starts, reset_end)
            if low and self.ended[low - 1] >= reset.start:
                base = None  # an add overlapped the reset: applied before or after it, its amount may count
        own = _amount(read) if read.name == "add" else 0
        up, down = self.up[high] - self.up[low] - max(own, 0), self.down[high] - self.down[low] - min(own, 0)
        need = None if base is None else count - base - own  # what the other adds applied before it add up to
        # by their sum: the record holds every add, the reset's value is known, and they can make the value
        by_sum = self.complete and need is not None and down <= need <= up
        by_value = self.sign is not None and (self.complete or not self.resets)
        positive = by_sum and self.largest > up - need  # some positive add cannot be spared
        negative = by_sum and self.smallest < down - need
        found = []
        for a_lane, indices in self.mine.items():
            if a_lane == (rank, getattr(read, "lane", None)):
                continue  # program order
            first = bisect.bisect_left(indices, low)
            last = bisect.bisect_left(indices, high)
            best = self._by_value(indices, first, last, count, next_reset) if by_value else -1
            if positive or negative:
                for j in range(last - 1, max(best, first - 1), -1):
                    amount = _amount(self.moved[indices[j]][1])
                    if (amount > 0 and amount > up - need) or (amount < 0 and amount < down - need):
                        best = j
                        break
            if best >= first:
                found.append(self.moved[indices[best]])
        return found

    @cached_property
    def largest(self) -> int:
        return max((_amount(e) for _, e in self.moved), default=0)

    @cached_property
    def smallest(self) -> int:
        return min((_amount(e) for _, e in self.moved), default=0)

    def _by_value(self, indices: list[int], first: int, last: int, count: int, next_reset: float) -> int:
        """The last of one rank's adds ``indices[first:last]`` whose returned value is no further than ``count``
        (the counter moving one way), among those that returned before the next reset began; -1 if none."""
        low, high, found = first, last, -1
        while low < high:  # the values of one rank's adds grow (or shrink) in its program order
            middle = (low + high) // 2
            e = self.moved[indices[middle]][1]
            value = _count(e.value)
            if e.end is None or e.end >= next_reset or value is None:
                high = middle  # from here on not comparable
                continue
            if self.sign * value <= self.sign * count:
                found, low = middle, middle + 1
            else:
                high = middle
        return found


def _running_max(values) -> list[float]:
    found, top = [], -math.inf
    for value in values:
        top = max(top, value)
        found.append(top)
    return found


def _broadcast_parents(rank: int, root: int | None, members) -> list[int]:
    """The ranks above ``rank`` in gloo's broadcast tree (see :func:`_broadcast_children`), its parent first,
    as global ranks: a rank receives the data from its parent, which forwards it only once it has it itself,
    so ``rank`` leaves only after all of them have entered."""
    members = list(members)
    if root is None or rank not in members or root not in members:
        return []
    size, start = len(members), members.index(root)
    v = (members.index(rank) - start) % size
    parents = []
    while v:
        v -= 1 << (v.bit_length() - 1)  # clear the highest bit: the rank that sent to v
        parents.append(members[(v + start) % size])
    return parents


def _broadcast_children(rank: int, root: int | None, members) -> list[int]:
    """The ranks gloo's broadcast sends to directly from ``rank`` (its binomial tree, ``gloo/broadcast.cc``:
    virtual ranks count from the root; a virtual rank v sends to v + 2**i for every 2**i above v's highest
    bit, within the group), as global ranks. A send waits until its receiver posted the receive, which a
    child does as it enters; so ``rank`` leaves only after these have entered."""
    members = list(members)
    if root is None or rank not in members or root not in members:
        return []
    size, start = len(members), members.index(root)
    v = (members.index(rank) - start) % size
    step = 1 << v.bit_length()  # the first power of two above v's highest bit (1 for the root)
    children = []
    while v + step < size:
        children.append(members[(v + step + start) % size])
        step <<= 1
    return children


def _column(name: str, backend: str):
    op = ops.BY_NAME.get(name)
    if op is None:
        return {}
    return op.gloo if backend == "gloo" else op.nccl


def order(run, backend: str = "gloo", *, formed: bool = True) -> Order:
    """The happens-before relation of ``run`` as ``backend`` would order it, seen from the host (``formed``: see
    :class:`Order`)."""
    return Order(run, backend, formed=formed)


def _flight_blind_until(flight) -> float | None:
    """When a rank's flight record lost its oldest entries (the ring keeps the last ``TORCH_FR_BUFFER_SIZE``,
    2,000 by default) in a run where DDP issued gradient all_reduces: the start of its oldest kept entry, before
    which DDP's all_reduces are not known. None when nothing was lost (every group's kept entries start at
    position 1) or DDP issued none."""
    entries = [e for e in flight if not e.p2p and e.start is not None]
    if not any(getattr(e, "issuer", None) == "DDP backward's gradient all_reduce" for e in entries):
        return None
    first: dict[str, int] = {}
    for e in entries:
        first[e.group] = min(first.get(e.group, e.seq), e.seq)
    if all(seq <= 1 for seq in first.values()):
        return None
    return min(e.start for e in entries)


def races(run, backend: str = "gloo") -> Races:
    """File accesses of ``run`` on different ranks that nothing orders (see :class:`Race`). A run in which at most
    one rank touched a file has none, and its model is not built (attack13 a04: 512 ranks of 150 all_reduces
    each, no file, took a diagnosis 54 s and 2.6 GB). ``run`` and ``backend`` are checked first, files or not
    (attack14 a06, attack18 a16)."""
    _check_run(run)
    _check_backend(backend)
    if not _files_on_two_ranks(run):
        return Races()
    return Order(run, backend).races()


def point_to_point_calls(events: dict[int, list], *, failed: bool = False) -> tuple[dict, dict]:
    """Each rank's point-to-point calls by (sender, receiver, group, tag), in program order: the k-th send from A
    to B on a group with a tag pairs with the k-th receive on B from A on that group with that tag (gloo pairs by
    both; attack20 a01, a09: messages of two tags or two groups were paired by position). A peer named in group
    ranks is mapped to its global rank; a receive counts from the rank it returned. Calls that failed count only
    with ``failed`` (the diagnosis of a run that did not finish asks which sends and receives have no partner;
    the model orders only calls that completed)."""
    sends: dict[tuple[int, int, str, int], list] = {}
    recvs: dict[tuple[int, int, str, int], list] = {}
    for rank, mine in events.items():
        for e in mine:
            if e.kind != "p2p" or (e.error and not failed):
                continue
            if e.name in _SENDS:
                target = ops.root_of(e)  # dst, or group_dst through the group's ranks (attack11 a13)
                if target is not None:
                    sends.setdefault((rank, target, e.group or "", e.tag or 0), []).append(e)
            elif e.name in _RECVS:
                source = e.peer.get("from")  # what recv returned: a global rank
                source = ops.root_of(e) if source is None else source
                if source is not None:
                    recvs.setdefault((source, rank, e.group or "", e.tag or 0), []).append(e)
    return sends, recvs


def _check_run(run: object) -> None:
    """``run`` is what ``bl.run`` (or ``barrierlab.report``) returned: refused by name otherwise (attack18 a16).
    Checked by shape (ranks, each with its events): the read side imports only downward, and result imports this."""
    ranks = getattr(run, "ranks", None)
    if not isinstance(ranks, list) or not all(isinstance(getattr(r, "events", None), list) for r in ranks):
        raise TypeError(
            f"run must be the Run that barrierlab.run (or barrierlab.collect.from_records) returned, got {type(run).__name__}"
        )


def _check_backend(backend: object) -> None:
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be 'gloo' or 'nccl', not {backend!r}")


def _files_on_two_ranks(run) -> bool:
    """Whether two or more ranks of ``run`` recorded a file access (what a race needs)."""
    touched = 0
    for result in run.ranks:
        if any(e.kind == "file" for e in result.events):
            touched += 1
            if touched > 1:
                return True
    return False


def lost_on_nccl(run) -> list[tuple[Access, Access]]:
    """Conflicting file accesses this run's gloo ordering keeps apart and NCCL's (host side) would not."""
    _check_run(run)
    if not _files_on_two_ranks(run):
        return []
    gloo, nccl = Order(run, "gloo"), Order(run, "nccl")
    lost = []
    for race in nccl.races():
        a, b = race.first, race.second
        if gloo.ordered(a.rank, a.event, b.rank, b.event) or gloo.ordered(b.rank, b.event, a.rank, a.event):
            lost.append((a, b))
    return lost


@dataclass(frozen=True)
class LeftEarly:
    """Who may leave one collective call before ``late`` has entered it, in one run.

    ``measured``: the ranks whose call returned before the late rank's call began, by the run's clock (on
    gloo, as the run went); ``gloo`` and ``nccl``: the ranks whose return the model does *not* order after the
    late rank's entry on that backend (host side), so nothing stops them leaving first. A rank the model
    orders after the entry cannot have left before it, so ``measured`` lies within ``gloo`` (tested on real
    runs in ``tests/test_left_early.py``).
    """

    call: str
    late: int
    measured: frozenset[int]
    gloo: frozenset[int]
    nccl: frozenset[int]


def left_early(run, late_rank: int, call: int = 1, *, formed: bool = True) -> LeftEarly:
    """The ``call``-th collective call (1 for the first) of every rank of ``run``: who left it before
    ``late_rank`` entered it, measured, and who may, as the model orders the run on gloo and on NCCL (``formed``:
    whether the group's NCCL communicator already exists; with False the group's first collective forms it and
    holds every rank)."""
    if isinstance(late_rank, bool) or not isinstance(late_rank, int):
        raise TypeError(f"late_rank must be an int, not {type(late_rank).__name__}")
    if isinstance(call, bool) or not isinstance(call, int):
        raise TypeError(f"call must be an int, not {type(call).__name__}")
    if not 0 <= late_rank < len(run.ranks):
        raise ValueError(f"late_rank must be a rank of the run (0 to {len(run.ranks) - 1}), not {late_rank}")
    if call < 1:
        raise ValueError(f"call must be 1 or more (the first collective call is 1), not {call}")
    if not isinstance(formed, bool):
        raise TypeError(f"formed must be a bool, not {type(formed).__name__}")
    orders = {backend: Order(run, backend, formed=formed) for backend in BACKENDS}
    events = orders["gloo"].events
    calls = {rank: [e for e in evs if e.kind == "collective"] for rank, evs in events.items()}
    if any(len(mine) < call for mine in calls.values()):
        short = sorted(rank for rank, mine in calls.items() if len(mine) < call)
        raise ValueError(f"call {call}: ranks {short} made fewer than {call} collective calls")
    mine = {rank: c[call - 1] for rank, c in calls.items()}
    late = mine[late_rank]
    others = [rank for rank in mine if rank != late_rank]
    measured = {r for r in others if mine[r].end is not None and mine[r].end < late.start}
    may = {}
    for backend, order in orders.items():
        # the model compares points of its own event lists: find each call there by identity
        entered = order.enter(late_rank, late)
        may[backend] = frozenset(r for r in others if not order.before(entered, order.leave(r, mine[r])))
    return LeftEarly(late.name + (" (async_op=True)" if late.is_async else ""), late_rank, frozenset(measured), **may)


def left_early_table(rows: dict[str, LeftEarly]) -> str:
    """``rows`` (a label per :func:`left_early` result) as a table: who left before the late rank arrived on
    gloo (measured) and who may leave first on NCCL (the model, host side)."""
    if not rows:
        return ""

    def ranks(found: frozenset[int]) -> str:
        return "ranks " + ", ".join(map(str, sorted(found))) if found else "nobody"

    late = {row.late for row in rows.values()}
    who = f"rank {late.pop()}" if len(late) == 1 else "the late rank"
    table = [("", f"on gloo: left before {who} arrived (measured)", "on NCCL: may leave first (model, host)*")]
    table += [(label, ranks(row.measured), ranks(row.nccl)) for label, row in rows.items()]
    widths = [max(len(line[i]) for line in table) + 2 for i in (0, 1)]
    lines = [f"{a:<{widths[0]}}{b:<{widths[1]}}{c}" for a, b, c in table]
    return "\n".join([*lines, NCCL_FORMED_NOTE])
