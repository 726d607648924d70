"""Per-rank recording of collective calls and learner-defined spans.

Inside a rank started by :func:`barrierlab.run` recording is on by default.  Under ``torchrun`` or any
other launcher it is on when ``BARRIERLAB_RECORD_DIR`` names a folder (one ``rankN.events`` file per
rank; see :func:`start_from_env`), and off otherwise: then :func:`span` costs one global lookup and
the ``torch.distributed`` functions are untouched.

Each event is one JSON line at entry and one at exit.  Lines are written behind, in batches, but never
late where it matters: the batch goes to the file before any call that can block the rank (every
recorded ``torch.distributed`` call, store call, ``Work.wait()``, ``torch.save``/``load``), before the rank
signals a process, forks, execs or calls ``os._exit``, at exit, at once when nothing was written for
:data:`WRITE_EVERY` seconds, and every :data:`WRITE_EVERY` seconds from a helper thread (a rank asleep or
computing in a span).  So a rank that hangs leaves the record of what it entered and never left, and a
rank killed while it runs Python code loses at most the last :data:`WRITE_EVERY` seconds.  (One write per
batch instead of two checked writes per event: see docs/performance.md.)  Times are ``time.monotonic()``
seconds, one system-wide clock for every rank on a Linux machine.

File accesses are recorded from every thread of the rank and from the children it forks (a ``DataLoader``'s
workers), each event naming its lane (the thread or child) when it is not the rank's own thread; so are what
orders lanes (a thread's ``start`` and ``join``, a ``fork``, an ``os.waitpid`` that reaped a child) and file locks
(``fcntl.flock``/``lockf``, what ``filelock.FileLock`` uses).

The recorder observes and never changes what torch does: the ``torch.distributed`` functions are
replaced by wrappers that call the originals with the same arguments and return their results
untouched (the very ``Work`` object of an ``async_op=True`` call, whose completion is recorded through
``work.get_future().add_done_callback``).  Collectives that torch issues from C++ or from its own Python
code (DDP's gradient all_reduce and buffer broadcasts, DTensor, FSDP) never pass through these wrappers;
torch's flight recorder sees them, and the recorder copies its entries (op, sequence id, sizes, dtypes,
the Python frames that issued them) into the same file when the rank stops recording, and whenever the
rank's main thread has not moved for :data:`STALL_DUMP` seconds (so a rank killed at the deadline
leaves them too).
"""

from __future__ import annotations

import atexit
import builtins
import collections
import contextlib
import functools
import inspect
import io
import itertools
import json
import mmap
import os
import pathlib
import pickle
import sys
import sysconfig
import threading
import time
import types
import weakref
from collections.abc import Iterator

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from barrierlab import events, ops
from barrierlab._protocol import RECORD_DIR_VARIABLE
from barrierlab.events import EXCLUSIVE, SPAN_KINDS
from barrierlab.sites import MACHINERY, installed_package, is_learners

#: Captured when barrierlab is imported, before the learner's code runs: a rank that replaces ``json.dumps`` (a
#: ``partial`` with ``indent=2`` for its logs) must not change the lines barrierlab writes (attack12 r5).
_json_dumps = json.dumps

#: What the recorder wraps, from the ops table: collectives (numbered per rank) and point-to-point calls.
COLLECTIVES = tuple(sorted(ops.NUMBERED))
POINT_TO_POINT = tuple(sorted(ops.RECORDED_P2P))


_TORCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(dist.__file__)))
#: What torch's files' paths start with: its folder and a separator, so that an installed package whose name
#: starts with "torch" (torchmetrics, torchvision) in the same site-packages is not taken for torch.
_TORCH_PREFIX = _TORCH_DIR + os.sep
#: The files of torch.distributed.checkpoint's functions (the ops table's rows of that kind) -> {function: name}.
_CHECKPOINT_ENTRIES: dict[str, dict[str, str]] = {}
for (_path, _function), _name in ops.CHECKPOINT_ENTRIES.items():
    _CHECKPOINT_ENTRIES.setdefault(os.path.join(os.path.dirname(_TORCH_DIR), _path), {})[_function] = _name
_THIS_FILE = os.path.abspath(__file__)
_LAUNCHER = {os.path.join(os.path.dirname(_THIS_FILE), name) for name in ("_rank.py", "_warm.py")}
#: Seconds the rank's main thread must stay on one instruction before torch's flight recorder is copied.
STALL_DUMP = 1.0
#: How many of the learner's frames outside the innermost one are kept per collective, at each end of its call
#: chain: the innermost ones (the helpers that made the call) and the outermost ones (the rank function and the
#: lines below it, where ranks' paths part); a deeper chain (recursion) counts the frames between as left out.
CALLERS_KEPT = 8
_Tensor = torch.Tensor


#: The recorder holds its events file at this descriptor number or above (close-on-exec), out of the way of
#: the descriptors a rank opens for itself, which the system numbers from the lowest free one.
HIGH_FD = 512
#: Longest text (span or op name, file, function) recorded, in characters: at most a few KiB per line in bytes
#: whatever the learner passes (three span names of 80 MB once pushed the kernel reading them by 1 GiB).
MAX_TEXT = 1000
#: Seconds a recorded line may wait in memory before it is written (see the module's docstring).
WRITE_EVERY = 0.1
#: Lines kept in memory at most: the next one writes them all (with lines of a few hundred bytes, some 100 KiB).
PENDING_KEPT = 512
#: Most distinct texts whose JSON form is cached (span names made with f-strings are all different).
_QUOTED_KEPT = 4096


def _clip_text(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _high_floor() -> int:
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return HIGH_FD if soft == resource.RLIM_INFINITY or soft > 2 * HIGH_FD else max(3, soft // 2)


def reserve_high_fd() -> None:
    """Grow this process's table of descriptors to hold :data:`HIGH_FD` now, while it has one thread: once
    it has more, growing it makes the kernel wait for an RCU grace period (7.8 ms measured at the recorder's
    first file in a rank, on its critical path). Called first thing in a rank; the table never shrinks."""
    import fcntl

    try:
        os.close(fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, _high_floor()))
    except OSError:
        pass


def _high_fd(fd: int) -> int:
    """``fd`` moved to a close-on-exec descriptor at :data:`HIGH_FD` or above (below the process's limit)."""
    import fcntl

    floor = _high_floor()
    try:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor)
    except OSError:
        return fd
    os.close(fd)
    return high


class _PerThread(threading.local):
    """Per thread: how deep it is inside recorded calls, and the ``"lane"`` field of its events (``""`` for the
    rank's own thread; None until its first event). barrierlab's own threads (named ``barrierlab-...``: the
    watchdog, the flight-record watch) start one level deep, so nothing they do is recorded as the rank's."""

    def __init__(self) -> None:
        self.lane = None
        #: Whole-file locks this thread holds: descriptor -> [its file ("device:inode"), the fields of its
        #: "unlock" line, when the descriptor was last seen open] (see :meth:`_Recorder.held`).
        self.holds: dict[int, list] | None = None
        #: The open event this thread recorded last whose file object ``open`` has not returned yet.
        self.pending: int | None = None
        #: Inside the recorder's ``open`` wrapper: an exclusive create (mode "x") is recorded once it returned.
        self.in_open = False
        #: The exclusive create this thread's ``open`` is making: (path as JSON text, the name, opened only for
        #: writing), recorded by the wrapper as a write when it succeeds, as a look that found the file when not.
        self.exclusive: tuple | None = None
        #: Ids of the synchronising calls this thread is in while it has files open.
        self.syncs: set[int] | None = None
        thread = _current_thread()
        self.depth = 1 if thread is not None and str(thread.name).startswith(_MACHINERY_THREADS) else 0


#: The names of barrierlab's own threads start so.
_MACHINERY_THREADS = "barrierlab"


def _current_thread() -> threading.Thread | None:
    """The calling thread's ``Thread`` object, or None for a thread ``threading`` does not know (one torch started
    in C++): ``threading.current_thread()`` would make and keep a dummy object for it."""
    try:
        return threading._active.get(threading.get_ident())  # noqa: SLF001 - read only
    except Exception:  # noqa: BLE001
        return None


def _names(fd: str) -> str | None:
    """What this process's descriptor ``fd`` names (a path, ``socket:[…]``), None when it is closed."""
    try:
        return os.readlink("/proc/self/fd/" + fd)
    except OSError:
        return None


def _descriptors() -> dict[str, list[str]] | None:
    """Every open descriptor of this process by what it names; None without ``/proc``."""
    found: dict[str, list[str]] = {}
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for fd in fds:
        name = _names(fd)
        if name is not None:
            found.setdefault(name, []).append(fd)
    return found


def _offset(fd: str) -> int | None:
    """The file offset of this process's descriptor ``fd`` (its ``pos`` in ``/proc/self/fdinfo``), None if unknown."""
    try:
        with open("/proc/self/fdinfo/" + fd, "rb") as info:
            first = info.readline()
    except OSError:
        return None
    return int(first.split()[1]) if first.startswith(b"pos:") else None


def _state(fd: str) -> tuple | None:
    """What says whether a file was written to since: (device, inode, size, modification time) of descriptor ``fd``."""
    try:
        info = os.fstat(int(fd))
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _path_state(path: str) -> tuple | None:
    """:func:`_state` of the file at ``path`` (None if it is gone or a link: then it cannot be compared)."""
    try:
        info = os.lstat(path)  # (os.stat is wrapped while recording: it would record a look)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _read_state(fd: str) -> tuple | None:
    """What says whether a file open for reading was read through since: (device, inode, offset, whether the
    offset is at the end of the file) of descriptor ``fd``."""
    offset = _offset(fd)
    try:
        info = os.fstat(int(fd))
    except (OSError, ValueError):
        return None
    if offset is None:
        return None
    return (info.st_dev, info.st_ino, offset, offset >= info.st_size)


def _nothing_past(path: str, state: tuple) -> bool:
    """Whether the file at ``path`` is the one ``state`` (:func:`_read_state`) was taken of and holds no byte
    past its offset: a read through that descriptor would have found nothing."""
    try:
        info = os.lstat(path)  # (os.stat is wrapped while recording: it would record a look)
    except (OSError, ValueError):
        return False
    return (info.st_dev, info.st_ino) == state[:2] and info.st_size <= state[2]


#: The most files the recorder follows at once (see :meth:`_Recorder.opened`): beyond it, files already closed
#: before any synchronising call saw them open are dropped first; a rank that holds more open than this has the
#: rest taken at their open.
_OPENED_KEPT = 256

#: Kinds of call that may order this rank with others: a file kept open across one is looked at as it returns.
_SYNCHRONISING = frozenset(("collective", "p2p", "store", "wait"))
#: Kinds of event that may order this rank's later accesses after another rank's (threads' handoffs too): a look at
#: a path repeated after one is recorded again, even with the same answer (attack18 a03).
_ORDERING = _SYNCHRONISING | {"sync"}


class _Recorder:
    """Writes one JSON line per entry and per exit, behind: lines wait in memory until :meth:`flush` writes
    them with one ``write`` call (see the module's docstring for when). A line that must be in the file before
    the rank blocks is written with ``flush=True``, together with every line before it.

    The recorder owns its file: it holds it close-on-exec at a high descriptor, and before each write checks
    (``fstat``: device and inode) that the descriptor still is that file; if the rank closed it (and perhaps
    opened a file of its own at that number), the file is opened again by its path, never through a symlink.
    A failure to record never reaches the learner's code: recording stops instead."""

    def __init__(self, path: str, rank: int, t0: float) -> None:
        self.path = path
        self.fd = _high_fd(
            os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        )
        info = os.fstat(self.fd)
        self.identity = (info.st_dev, info.st_ino)
        #: The file the recorder made (device and inode): what the kernel reads must still be it at the end.
        self.made = self.identity
        self.rank = rank
        self._seqs = itertools.count(1)  # next() of a count is atomic: threads never share a number
        #: Per process group (its name; "" the default group), the count of this rank's collectives on it.
        self._positions: dict[str, itertools.count] = {}
        self._ids = itertools.count(1)
        #: How many events of the kinds in :data:`_ORDERING` this rank has begun (any thread).
        self.orderings = 0
        #: How many calls on a group this rank is not in were recorded (:meth:`outside`, at most OUTSIDE_KEPT).
        self.outsides = 0
        self._thread = _PerThread()
        #: The learner's files opened and not yet seen closed, by their open event's id (see :meth:`opened`):
        #: any thread's, looked at as any thread's synchronising call returns (attack17 a04).
        self.opened_files: dict[int, list] = {}
        #: ``opened_files`` was full and nothing in it could be dropped: files opened until the next
        #: synchronising call are taken at their open (one search of the table per call, not one per open).
        self.opened_full = False
        #: The lanes of this process's threads other than the rank's own: numbered in the order they start.
        self._lanes = itertools.count(1)
        #: "" in the rank; ``"process PID"`` in a child forked from it (its events' lanes start with this).
        self.process = ""
        #: The id of the last "fork" event (a child forked from this process refers to it).
        self.fork_event: int | None = None
        self._quoted: dict[str, str] = {}
        #: Lines not written yet (appended by any thread; taken from the left, in order, by one flush at a time).
        self.pending: collections.deque[bytes] = collections.deque()
        self.lock = threading.RLock()
        self.flushing = False
        self.written_at = time.monotonic()
        self.write(
            {"meta": "start", "rank": rank, "t0": t0, "pid": os.getpid(), "wall": time.time() - (time.monotonic() - t0)}
        )

    @property
    def depth(self) -> int:
        """How deep the calling thread is inside recorded calls (a call made inside one, e.g. the barrier
        inside DCP's save, is not recorded again). Per thread: a thread blocked in a barrier must not hide
        another thread's collectives."""
        return self._thread.depth

    @depth.setter
    def depth(self, value: int) -> None:
        self._thread.depth = value

    def lane(self) -> str:
        """The ``"lane"`` field of the calling thread's events: ``""`` for the rank's own thread, else the name
        the thread's events are ordered under (:meth:`thread_lane`; in a forked child ``"process PID"`` for the
        thread that forked it). One attribute read per event once known."""
        text = self._thread.lane
        if text is None:
            if threading.get_ident() == _main_thread and not self.process:
                text = ""
            else:
                text = ',"lane":' + _json_dumps(self.thread_lane(_current_thread()))
            self._thread.lane = text
        return text

    def thread_lane(self, thread: threading.Thread | None) -> str:
        """The lane of ``thread``'s events: given once, when it starts (``Thread.start`` records it as the start
        event's ``child``) or when it first records (a thread not started through ``Thread.start``, or not known
        to ``threading`` (None): no start event then, so nothing orders its events after the rank's)."""
        if thread is None:
            return f"{self.process + ', ' if self.process else ''}thread {next(self._lanes)} (not a Python thread)"
        label = getattr(thread, "_barrierlab_lane", None)
        if label is None or not label.startswith(self.process):  # a thread object of the parent, before a fork
            name = getattr(thread, "name", "?")
            label = f"{self.process + ', ' if self.process else ''}thread {next(self._lanes)} ({name})"
            try:
                thread._barrierlab_lane = label
            except Exception:  # noqa: BLE001 - a thread object that takes no attribute: its joins are not seen
                pass
        return _clip_text(label)

    def _holds_its_file(self) -> bool:
        try:
            info = os.fstat(self.fd)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self.identity

    def _reopen(self) -> None:
        """Open the events file again by path (no-follow, append), or stop recording. The old descriptor number
        is the rank's now: it is never written to or closed."""
        import stat

        self.fd = -1
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            return
        self.fd, self.identity = _high_fd(fd), (info.st_dev, info.st_ino)

    def _emit(self, data: bytes, flush: bool = False) -> None:
        self.pending.append(data)
        # a forked child (a data worker) writes each line at once: it has no helper thread to write what it left
        # pending, and the rank's end may kill it (its reads were lost)
        if (
            flush
            or self.process
            or len(self.pending) >= PENDING_KEPT
            or time.monotonic() - self.written_at >= WRITE_EVERY
        ):
            self.flush()

    def flush(self) -> None:
        """Write every pending line, in order, with one ``write`` on the checked descriptor."""
        if not self.pending:
            return
        with self.lock:
            if self.flushing:  # re-entered on this thread (a signal handler): the outer flush writes
                return
            self.flushing = True
            try:
                chunks, take = [], self.pending.popleft
                while True:
                    try:
                        chunks.append(take())
                    except IndexError:
                        break
                self.written_at = time.monotonic()
                if self.fd < 0 or not chunks:
                    return
                try:
                    if not self._holds_its_file():
                        self._reopen()
                        if self.fd < 0:
                            return
                    os.write(self.fd, b"".join(chunks))
                except OSError:
                    self.fd = -1  # recording stops; the learner's call goes on
            finally:
                self.flushing = False

    def forked(self) -> None:
        """In a child forked from the rank: the parent's pending lines are the parent's (it wrote them before
        the fork); a lock another thread held at the fork is never released here. Its events get ids of their own
        (from its pid times 2**24): with the parent's counter, a data worker's file reads reused the ids of the
        rank's later collectives, and the reader, keying events by id, lost those collectives (attack8)."""
        self.pending = collections.deque()
        self.lock = threading.RLock()
        self.flushing = False
        self._ids = itertools.count((os.getpid() << 24) + 1)
        depth = self._thread.depth
        self._thread = _PerThread()  # the forking thread's lane and depth were the parent's
        self._thread.depth = depth
        self._lanes = itertools.count(1)
        self.process = f"process {os.getpid()}"
        self._thread.lane = ',"lane":' + _json_dumps(self.process)
        if self.fork_event is not None:  # the child's first event: it runs from the parent's fork on
            self.instant("sync", "forked", None, f',"of":{self.fork_event}', flush=True)

    def write(self, event: dict) -> None:
        """One line written now (with the lines pending before it)."""
        self._emit((_json_dumps(event, separators=(",", ":")) + "\n").encode(), flush=True)

    def quote(self, text: str) -> str:
        """JSON string literal of ``text`` (at most :data:`MAX_TEXT` characters), cached: file names,
        functions and op names repeat."""
        quoted = self._quoted.get(text)
        if quoted is None:
            if len(self._quoted) >= _QUOTED_KEPT:
                self._quoted.clear()
            quoted = self._quoted[text] = _json_dumps(_clip_text(str(text)))
        return quoted

    def held(self, fd: int, inode: str, extra: str) -> None:
        """This thread took a whole-file lock through descriptor ``fd`` (its "lock" event is written): until an
        "unlock" releases it, each of the thread's events first checks that the descriptor is still that file
        (:meth:`_check_holds`)."""
        holds = self._thread.holds
        if holds is None:
            holds = self._thread.holds = {}
        holds[fd] = [inode, extra, time.monotonic()]

    def unheld(self, fd: int) -> None:
        """The thread released the lock of ``fd`` itself (``LOCK_UN``: its "unlock" is recorded)."""
        holds = self._thread.holds
        if holds:
            holds.pop(fd, None)

    def _check_holds(self, holds: dict[int, list]) -> None:
        """A lock released by closing its descriptor (``with open(path) as f: fcntl.flock(f, LOCK_EX)`` and no
        ``LOCK_UN``: the close releases it; ``filelock`` unlocks first). Python records no close, so each event of
        the holding thread first looks at the descriptor (``fstat``): while it is that file, the lock is held, and
        the event is taken inside the hold (:meth:`_still_held`); once it is closed (or another file), an
        "unlock" is written at the time of the thread's last event seen inside the hold, sorting right after it:
        everything the thread did up to then came before the release, which is all the ordering model takes
        from it."""
        for fd, hold in list(holds.items()):
            try:
                info = os.fstat(fd)
                if f"{info.st_dev}:{info.st_ino}" == hold[0]:
                    continue
            except OSError:
                pass
            del holds[fd]
            seen = repr(hold[2])
            line = f'{{"id":{next(self._ids)},"kind":"sync","name":"unlock","t":{seen},"end":{seen}{hold[1]}'
            self._emit((line + self.lane() + "}\n").encode())

    @staticmethod
    def _still_held(holds: dict[int, list] | None, t: float) -> None:
        """The thread's event at ``t`` (its start, or an end) came while its locks were still held."""
        if holds:
            for hold in holds.values():
                hold[2] = t

    def opened(self, path: str, name, event_id: int, write_only: bool = False, read_only: bool = False) -> None:
        """The learner opened file ``path`` (JSON text; ``name`` as the rank gave it; ``event_id`` its open
        event). Python records no close and no write: bytes written through a file object kept open across a
        barrier may reach the file after it (attack15 a03), and a file opened before a barrier may be read after
        it (a11). So as each synchronising call returns, the files still open are looked at (the file object
        ``open`` returned, bound by :func:`_wrap_open`; else ``/proc/self/fd``); once one is found closed, a
        "held" event (``of``: its open) is written at the time it was last seen open (sorting right after that
        call), and before it one with value "unused" at the last such time its file offset was still 0 when the
        file was not empty at its open: nothing read through it yet. The ordering model takes the access from
        the open (a read from the "unused" mark) to the last "held" one. A file opened only for writing is
        fstat-ed at each look (inode, size, modification time): when it had not changed since a look when it is
        found closed, nothing was written through it after that look, and its "held" line is written at the last
        look that a change followed (none when no change did), not the last it was seen open: a file flushed
        before a barrier and closed after it, nothing written in between, is not taken as written after the
        barrier (attack17 a05). A file opened only for reading is followed by its descriptor's offset (the bytes
        taken from the file, read-ahead included) and size at each look: when it is closed, and the offset had
        not moved since a look at which it was at the end of the file, and the file holds no bytes past that
        offset now, nothing was read through it after that look (attack18 a13: a file read whole before a
        barrier and closed after it does not race a rewrite after the barrier; a read through ``seek`` back or
        ``os.pread`` is not seen, as for attack17 a03)."""
        opened = self.opened_files
        if len(opened) >= _OPENED_KEPT and not self.opened_full:
            self._drop_closed_unseen(opened)
            self.opened_full = len(opened) >= _OPENED_KEPT  # no second search until a synchronising call
        if len(opened) < _OPENED_KEPT:
            try:
                # [the path as the system names it, last seen open, last seen unused, seen used, descriptors,
                #  path as JSON text, weak reference to the file object, not empty at its open, opened only
                #  for writing, (inode, size, mtime) at the last look -- for a file opened only for reading:
                #  (inode, offset, at the end) --, the last look that a change followed, opened only for reading]
                opened[event_id] = [
                    _plain_paths.get(path) or json.loads(path),
                    None,
                    None,
                    False,
                    None,
                    path,
                    None,
                    False,
                    write_only,
                    None,
                    None,
                    read_only,
                ]
            except ValueError:
                return
            self._thread.pending = event_id

    @staticmethod
    def _drop_closed_unseen(opened: dict[int, list]) -> None:
        """Drop the files closed before any synchronising call saw them open: they need no "held" line. A bound
        file object tells it; the others (``os.open``) are looked up in ``/proc/self/fd``, once for all."""
        names: dict[str, list[str]] | None = None
        for key, seen in list(opened.items()):
            if seen[1] is not None:
                continue
            if seen[6] is not None:
                file = seen[6]()
                if file is None or getattr(file, "closed", True):
                    opened.pop(key, None)
                continue
            if names is None:
                names = _descriptors()
                if names is None:
                    return
            if seen[0] not in names:
                opened.pop(key, None)

    def bind(self, file) -> None:
        """``open`` returned ``file`` for the open this thread just recorded: follow that object (no system call
        to tell whether it is closed, and renaming the path does not lose it, attack17 a13, a14)."""
        event_id, self._thread.pending = self._thread.pending, None
        entry = self.opened_files.get(event_id) if event_id is not None else None
        if entry is None:
            return
        try:
            name = file.name
            if not isinstance(name, (str, bytes)) or os.path.abspath(os.fsdecode(name)) != entry[0]:
                return  # not the file the open event names (opened by descriptor, or another open's)
            fd = file.fileno()
            entry[4] = [str(fd)]
            entry[6] = weakref.ref(file)
            entry[7] = os.fstat(fd).st_size > 0
        except (OSError, ValueError, TypeError, AttributeError):
            pass

    def _look_at_opened(self, opened: dict[int, list], now: float | None) -> None:
        """Which of ``opened`` are still open (``now``: the time a synchronising call returned), and a "held"
        line for each found closed after it was seen open past such a call; ``now`` None: the rank ends, every
        file counts as closed. A bound file object tells it without a system call; an unbound descriptor
        (``os.open``) is looked up in ``/proc/self/fd``, its last descriptors first."""
        names: dict[str, list[str]] | None = None  # the path a descriptor names -> those descriptors
        self.opened_full = False
        for event_id, seen in list(opened.items()):
            fds = None
            if now is not None:
                if seen[6] is not None:
                    file = seen[6]()
                    fds = seen[4] if file is not None and not getattr(file, "closed", True) else None
                elif seen[4] and all(_names(fd) == seen[0] for fd in seen[4]):
                    fds = seen[4]
                else:
                    if names is None:
                        names = _descriptors()
                        if names is None:  # no /proc (not Linux): files kept open are taken at their open
                            opened.clear()
                            return
                        bases = {os.path.basename(name) for name in names}
                    fds = names.get(seen[0])
                    if not fds and os.path.basename(seen[0]) in bases:  # through a symlink: resolved only then
                        seen[0] = os.path.realpath(seen[0])
                        fds = names.get(seen[0])
                    seen[4] = fds
            if fds:
                if seen[8] or seen[11]:
                    state = _state(fds[0]) if seen[8] else _read_state(fds[0])
                    if state != seen[9]:
                        if seen[9] is not None:
                            seen[10] = seen[1]  # written through after that look
                        seen[9] = state
                seen[1] = now
                if not seen[3]:
                    if seen[7] and all(_offset(fd) == 0 for fd in fds):
                        seen[2] = now
                    else:
                        seen[3] = True
                continue
            opened.pop(event_id, None)
            last = seen[1]
            if seen[8] and seen[9] is not None and _path_state(seen[0]) == seen[9]:
                last = seen[10]  # nothing written through it after its last look
            elif seen[11] and seen[9] is not None and seen[9][3] and _nothing_past(seen[0], seen[9]):
                last = seen[10]  # at the end of the file at its last look, and nothing was added past it since
            for t, value in ((seen[2], ',"value":"unused"'), (last if last != seen[2] else None, "")):
                if t is not None:
                    line = (
                        f'{{"id":{next(self._ids)},"kind":"file","name":"held","t":{t!r},"end":{t!r},'
                        f'"path":{seen[5]},"of":{event_id}'
                    )
                    self._emit((line + value + self.lane() + "}\n").encode())

    def enter(
        self, kind: str, name: str, numbered: bool, site: tuple | None, extra: str = "", flush: bool = True
    ) -> int:
        """The entry line of an event; ``flush``: the call may block the rank, so the line is written now."""
        holds = self._thread.holds
        if holds:
            self._check_holds(holds)
        event_id = next(self._ids)
        if kind in _ORDERING:
            self.orderings += 1
        if kind in _SYNCHRONISING and self.opened_files:
            syncs = self._thread.syncs
            if syncs is None:
                syncs = self._thread.syncs = set()
            syncs.add(event_id)
        now = time.monotonic()
        self._still_held(holds, now)
        line = f'{{"id":{event_id},"kind":"{kind}","name":{self.quote(name)},"t":{now!r}'
        if numbered:
            counter = self._positions.get(_group_key(extra))
            if counter is None:  # setdefault keeps the one count a racing thread may have stored first
                counter = self._positions.setdefault(_group_key(extra), itertools.count(1))
            line += f',"seq":{next(self._seqs)},"pos":{next(counter)}'
        if site:
            line += f',"file":{self.quote(site[0])},"line":{site[1]},"func":{self.quote(site[2])}'
            if len(site) > 3 and site[3]:
                line += ',"callers":[' + ",".join(f"[{self.quote(f)},{n},{self.quote(c)}]" for f, n, c in site[3]) + "]"
            if len(site) > 4 and site[4]:
                line += f',"left_out":{site[4]}'
            if len(site) > 5 and site[5]:
                line += f',"within":{self.quote(site[5])}'
        self._emit((line + extra + self.lane() + "}\n").encode(), flush)
        return event_id

    def instant(self, kind: str, name: str, site: tuple | None, extra: str = "", flush: bool = False) -> int:
        """One line for an event with no duration (a file opened, renamed or removed): entry and end at once."""
        holds = self._thread.holds
        if holds:
            self._check_holds(holds)
        now = time.monotonic()
        self._still_held(holds, now)
        t = repr(now)
        event_id = next(self._ids)
        if kind in _ORDERING:
            self.orderings += 1
        line = f'{{"id":{event_id},"kind":"{kind}","name":{self.quote(name)},"t":{t},"end":{t}'
        if site:
            line += f',"file":{self.quote(site[0])},"line":{site[1]},"func":{self.quote(site[2])}'
        self._emit((line + extra + self.lane() + "}\n").encode(), flush)
        return event_id

    def outside(self, name: str, site: tuple | None) -> None:
        """One line for a call naming a group this rank is not in (torch warns and returns at once, doing
        nothing): ``"outside": true`` keeps it apart from the rank's calls, which it must not pair with
        (attack11 a05), while a finished run can still say it waited for nobody (review63b M3). The first
        :data:`OUTSIDE_KEPT` of a rank only: a loop of them is one mistake."""
        if self.outsides >= OUTSIDE_KEPT:
            return
        self.outsides += 1
        t = repr(time.monotonic())
        line = f'{{"id":{next(self._ids)},"kind":"collective","name":{self.quote(name)},"t":{t},"end":{t}'
        if site:
            line += f',"file":{self.quote(site[0])},"line":{site[1]},"func":{self.quote(site[2])}'
        self._emit((line + ',"outside":true' + self.lane() + "}\n").encode())

    def leave(self, event_id: int, error: BaseException | None = None, extra: str = "") -> None:
        holds = self._thread.holds
        if holds:
            self._check_holds(holds)
        now = time.monotonic()
        self._still_held(holds, now)
        if error is None:
            self._emit(f'{{"id":{event_id},"end":{now!r}{extra}}}\n'.encode())
        else:
            self.write({"id": event_id, "end": now, "error": _error_text(error)})
        syncs = self._thread.syncs
        if syncs and event_id in syncs:
            syncs.discard(event_id)
            opened = self.opened_files
            if opened:
                self.depth += 1  # listing /proc/self/fd is audited: not the learner's access
                try:
                    self._look_at_opened(opened, now)
                except Exception:  # noqa: BLE001 - a failure to look never reaches the learner's call
                    opened.clear()
                finally:
                    self.depth -= 1

    def completed(self, event_id: int, future) -> None:
        """Done callback of an async call's future (runs on torch's thread): when its work finished."""
        if self.fd < 0:
            return
        line = {"id": event_id, "done": time.monotonic()}
        try:
            future.value()
        except BaseException as error:  # noqa: BLE001 - the failure is what is recorded
            line["done_error"] = _error_text(error)
        self.write(line)

    def close(self) -> None:
        """Write what is pending, then close the events file if the descriptor still is it (else it is the
        rank's: left alone). A lock the closing thread still holds is released as the process ends, after
        everything it recorded: its "unlock" is written at the last time it was seen."""
        holds = self._thread.holds
        if holds:
            for hold in holds.values():
                hold[0] = None  # no file matches: each is written as released
            self._check_holds(holds)
        if self.opened_files:
            with contextlib.suppress(Exception):
                self._look_at_opened(self.opened_files, None)
        self.flush()
        ours = self.fd >= 0 and self._holds_its_file()
        fd, self.fd = self.fd, -1
        if ours:
            try:
                os.close(fd)
            except OSError:
                pass

    def lost(self) -> str:
        """ "" if the events file at its path is still the one this recorder made, else what became of it, in
        words (attack28 a12: another rank removed it, or put an empty file or a link to /dev/zero in its place, and
        the kernel read the rank as one that made no call)."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return "removed"
        except OSError as error:
            return f"unreadable ({error.strerror})"
        return "" if (info.st_dev, info.st_ino) == self.made else "replaced by another file"


def _error_text(error: BaseException) -> str:
    try:
        text = f"{type(error).__name__}: {error}"
    except Exception:  # noqa: BLE001 - an exception whose str() raises
        text = type(error).__name__
    return text[:2000]


_recorder: _Recorder | None = None
#: Set by :func:`stop`: what became of the events file when it is no longer the recorder's ("" if it still is).
lost_record = ""
_watch: _StallWatch | None = None
_idle_watch: _StallWatch | None = None  # started by start_watch, given the recorder by start
_originals: dict[tuple[object, str], object] = {}


def call_site(callers: bool = True) -> tuple | None:
    """The innermost frame outside torch and barrierlab's machinery: the learner's line; for collectives, then
    the learner's call chain further out (innermost first; :data:`CALLERS_KEPT` frames at each end, and how
    many were left out between), and the ``torch.distributed.checkpoint`` function the learner called, when
    the call was made inside one (``dcp.save`` gathering every rank's plan)."""
    frame = sys._getframe(2)
    within = None
    while frame is not None:
        code = frame.f_code  # read once per frame: each read of f_code is an audit event
        filename = code.co_filename
        if is_learners(filename):
            break
        entries = _CHECKPOINT_ENTRIES.get(filename)
        if entries is not None and code.co_name in entries:
            within = entries[code.co_name]
        frame = frame.f_back
    if frame is None:
        return None
    site = (filename, frame.f_lineno, code.co_name)
    if not callers:
        return site
    inner: list = []
    outer = None  # the outermost frames, once the innermost are kept
    left_out = 0
    frame = frame.f_back
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if filename in MACHINERY:
            break
        if is_learners(filename):
            if len(inner) < CALLERS_KEPT:
                inner.append((filename, frame.f_lineno, code.co_name))
            else:  # the frame itself: its line is read only if it stays among the outermost
                if outer is None:
                    outer = collections.deque(maxlen=CALLERS_KEPT)
                elif len(outer) == CALLERS_KEPT:
                    left_out += 1
                outer.append(frame)
        frame = frame.f_back
    if outer:
        for frame in outer:
            code = frame.f_code
            inner.append((code.co_filename, frame.f_lineno, code.co_name))
    if inner or within:
        return site + (inner, left_out, within)
    return site


def keep_chain(frames: list) -> tuple[list, int]:
    """The learner's frames of a call chain (innermost first) as :func:`call_site` keeps them: the innermost
    one, :data:`CALLERS_KEPT` callers after it and as many outermost ones; and how many were left out."""
    if len(frames) <= 1 + 2 * CALLERS_KEPT:
        return list(frames), 0
    return list(frames[: 1 + CALLERS_KEPT]) + list(frames[-CALLERS_KEPT:]), len(frames) - 1 - 2 * CALLERS_KEPT


_SHAPE_TEXT: dict = {}
_DTYPE_TEXT: dict = {}


def _describe(tensor) -> tuple[str, str]:
    """JSON text of a tensor's shape and dtype name, cached: a training loop repeats the same few."""
    shape, dtype = tensor.shape, tensor.dtype
    text = _SHAPE_TEXT.get(shape)
    if text is None:
        text = _SHAPE_TEXT[shape] = "[" + ",".join(map(str, shape)) + "]"
    name = _DTYPE_TEXT.get(dtype)
    if name is None:
        name = _DTYPE_TEXT[dtype] = '"' + str(dtype).removeprefix("torch.") + '"'
    return text, name


def _shapes(args: tuple, kwargs: dict) -> str:
    """``,"sizes":[[4,2]],"dtypes":["float32"]`` for the tensors a collective was given (at most 8)."""
    sizes, dtypes = [], []
    for value in args or kwargs.values():
        if isinstance(value, _Tensor):
            shape, dtype = _describe(value)
            sizes.append(shape)
            dtypes.append(dtype)
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], _Tensor):
            for tensor in value[:8]:
                if isinstance(tensor, _Tensor):
                    shape, dtype = _describe(tensor)
                    sizes.append(shape)
                    dtypes.append(dtype)
        if len(sizes) >= 8:
            break
    if not sizes:
        return ""
    return ',"sizes":[' + ",".join(sizes) + '],"dtypes":[' + ",".join(dtypes) + "]"


#: Arguments that name the other rank of a rooted or point-to-point call (global or group rank), recorded as given.
PEER_ARGUMENTS = events.PEER_ARGUMENTS
#: Point-to-point receives whose return value is the rank the data came from (recorded as ``"from"``).
_RETURNS_SENDER = frozenset({"recv", "recv_object_list"})
#: Async calls' ``Work`` objects (weakly held: the recorder never extends their life) -> their event's id,
#: so that ``Work.wait()`` can be recorded as the wait of that call.
_async_calls: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


#: (function, op name) -> its :func:`_positions`: found once per process that wraps it, or once in the warm
#: process (:func:`prepare`) for every rank forked from it (33 signatures cost a rank 7 ms at its start).
_POSITIONS: dict[tuple[object, str], tuple[tuple[str, int], ...]] = {}


def _positions(original, name: str = "") -> tuple[tuple[str, int], ...]:
    """(argument, position) of the arguments of ``original`` the recorder records as given — the peers, the
    group, the call's own ``timeout=`` and (from the ops table) its list of objects — found once when it is
    wrapped."""
    try:
        return _POSITIONS[(original, name)]
    except (KeyError, TypeError):  # TypeError: a callable that cannot be hashed
        pass
    try:
        parameters = list(inspect.signature(original).parameters)
    except (TypeError, ValueError):
        return ()
    op = ops.BY_NAME.get(name)
    wanted = (*PEER_ARGUMENTS, "group", "timeout", "tag", "op") + (
        (op.object_list,) if op is not None and op.object_list else ()
    )
    wanted += (op.outputs,) if op is not None and op.outputs else ()
    if op is not None and op.blocks[:1] == ops.SPLIT_ARGUMENTS[:1]:
        wanted += ops.SPLIT_ARGUMENTS
    found = tuple((argument, parameters.index(argument)) for argument in wanted if argument in parameters)
    try:
        _POSITIONS[(original, name)] = found
    except TypeError:
        pass
    return found


def prepare() -> None:
    """Find the recorded arguments of every op now (the warm process calls this once, so that each rank it
    forks starts recording without inspecting torch's signatures again)."""
    for names in (COLLECTIVES, POINT_TO_POINT):
        for name in names:
            original = getattr(c10d, name, None)
            if original is not None:
                _positions(original, name)


_GROUP_TEXT: dict[str, str] = {}
_CPU = torch.device("cpu")


def _group_text(group) -> str:
    """``,"group":"1","ranks":[0,2]`` for a process group other than the default one ("" for the default)."""
    if group is None or group is c10d.GroupMember.WORLD:
        return ""
    try:
        name = group.group_name
    except Exception:  # noqa: BLE001 - not a process group: torch will say so
        return ""
    text = _GROUP_TEXT.get(name)
    if text is None:
        try:
            ranks = c10d.get_process_group_ranks(group)
        except Exception:  # noqa: BLE001
            ranks = []
        text = _GROUP_TEXT[name] = f',"group":{_json_dumps(name)},"ranks":{_json_dumps(ranks)}'
    return text


_GROUP_FIELD = ',"group":'
_DECODER = json.JSONDecoder()


def _group_key(extra: str) -> str:
    """The process group named in a call's entry fields (as :func:`_group_text` or :func:`_local_group_text`
    wrote it), "" for the default group: the key of the call's position count."""
    at = extra.find(_GROUP_FIELD)
    if at < 0:
        return ""
    try:
        return str(_DECODER.raw_decode(extra, at + len(_GROUP_FIELD))[0])
    except ValueError:
        return ""


def _seconds(value) -> float | None:
    """A ``timeout=`` argument in seconds (a ``timedelta``, as torch takes it), else None."""
    try:
        seconds = float(value.total_seconds())
    except Exception:  # noqa: BLE001 - not a timedelta: torch will say so
        return None
    return seconds if seconds == seconds else None


def _group_timeout(group) -> float | None:
    """The timeout of ``group`` (None: the default group) on gloo, read from its backend's options each call
    (``_set_pg_timeout`` can change it); None when there is no such group or it has no gloo backend."""
    try:
        if group is None or group is c10d.GroupMember.WORLD:
            if not c10d.is_initialized():
                return None
            group = c10d._get_default_group()
        return _seconds(group._get_backend(_CPU).options._timeout)
    except Exception:  # noqa: BLE001 - private API, another backend, a destroyed group: nothing recorded
        return None


#: Split sizes longer than this are not recorded (the all-to-all's blocks are then not checked).
SPLITS_KEPT = 1024


def _split_text(value) -> str | None:
    """JSON text of an all-to-all's split sizes as given: ``null`` (None or empty: equal blocks), a list of
    ints, or None when they cannot be recorded (too long, not ints)."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        return "null"
    if isinstance(value, (list, tuple)) and len(value) <= SPLITS_KEPT and all(type(n) is int for n in value):
        return "[" + ",".join(map(str, value)) + "]"
    return None


#: The arguments that hold a call's list of output tensors (``Op.outputs``).
OUTPUT_LISTS = frozenset(op.outputs for op in ops.OPS if op.outputs)


def _aliased(value) -> bool:
    """Whether one tensor fills two slots of a list of output tensors (the same object, or two views that start
    at the same address with elements in them). Never raises."""
    try:
        if not isinstance(value, (list, tuple)) or len(value) > 65536:
            return False
        seen: set = set()
        for tensor in value:
            if not isinstance(tensor, torch.Tensor):
                return False
            key = tensor.data_ptr() if tensor.numel() and tensor.layout == torch.strided else id(tensor)
            if key in seen:
                return True
            seen.add(key)
    except Exception:  # noqa: BLE001 - a tensor subclass or device we cannot read: nothing recorded
        return False
    return False


def _arguments(positions: tuple[tuple[str, int], ...], args: tuple, kwargs: dict) -> str:
    extra, group, timeout, splits = "", None, None, []
    for name, index in positions:
        value = args[index] if len(args) > index else kwargs.get(name)
        if name in ops.SPLIT_ARGUMENTS:
            splits.append(_split_text(value))
            continue
        if value is None:
            continue
        if name in OUTPUT_LISTS:
            if _aliased(value):
                extra += ',"aliased":true'
            continue
        if name == "group":
            group = value
            extra += _group_text(value)
        elif name == "timeout":
            timeout = _seconds(value)
        elif name in PEER_ARGUMENTS:
            if isinstance(value, int):
                extra += f',"{name}":{int(value)}'
        elif name == "op":  # a reducing collective's op (review46b M1: ranks passing different ops mix results)
            extra += f',"reduce_op":{_json_dumps(_reduce_op_name(value))}'
        elif name == "tag":  # a send or receive pairs only with one of the same tag (attack20 a01)
            if isinstance(value, int) and not isinstance(value, bool) and value != 0:
                extra += f',"tag":{int(value)}'
        elif isinstance(value, (list, tuple)):
            extra += f',"objects":{len(value)}'
    if splits and None not in splits:
        extra += ',"splits":[' + ",".join(splits) + "]"
    if timeout is None:
        timeout = _group_timeout(group)
    if timeout is not None:
        extra += f',"timeout":{timeout!r}'
    return extra


def _reduce_op_name(op) -> str:
    """``ReduceOp.MAX`` -> "MAX"; a ``ReduceOp`` made by torch (premultiplied sum) -> its type's name; never raises."""
    try:
        name = getattr(op, "name", None)
        text = name if isinstance(name, str) else str(op)
    except Exception:  # noqa: BLE001 - the learner's own object: torch will say what it thinks of it
        text = type(op).__name__
    return text.rpartition(".")[2][:40]


def call_fields(positions: tuple[tuple[str, int], ...], args: tuple, kwargs: dict) -> str:
    """The fields a call's entry line adds (see ``events``): the shapes and dtypes of the tensors it was given,
    its peer and group arguments as given, the length of its list of objects (``positions``: from
    :func:`_positions`), the timeout in force (its own ``timeout=``, else its group's), and whether it is
    async."""
    extra = _shapes(args, kwargs)
    if positions:
        extra += _arguments(positions, args, kwargs)
    if kwargs.get("async_op"):
        extra += ',"async":true'
    return extra


#: Calls on a group the rank is not in recorded per rank (:meth:`_Recorder.outside`).
OUTSIDE_KEPT = 16


def _not_a_member(positions: tuple[tuple[str, int], ...], args: tuple, kwargs: dict) -> bool:
    """The call names a group this rank is not in (``new_group`` returned ``GroupMember.NON_GROUP_MEMBER``):
    torch warns and returns without doing anything, so it is recorded apart from the rank's calls
    (:meth:`_Recorder.outside`; taken for a call on the default group, it paired with other ranks' calls in the
    diagnosis, attack11 a05)."""
    for argument, index in positions:
        if argument == "group":
            group = kwargs["group"] if "group" in kwargs else args[index] if index < len(args) else None
            return group is c10d.GroupMember.NON_GROUP_MEMBER
    return False


def _new_group_text(args: tuple, kwargs: dict) -> str:
    """The members a ``new_group`` call asked for, as ``"made"`` (sorted, as torch sorts them, unless
    ``sort_ranks=False``: then in the order given; every rank must make the same groups in the same
    order, members or not: new_group's docstring; attack25 a06, pytorch/pytorch#130102: each rank made only its
    own subgroup). For ``new_group(ranks, use_local_synchronization=True)`` only the members call it (torch's
    docstring: "non-member ranks don't need to call into API"), so it is also recorded as a call of a group of
    its own, the members', not of the default group, where it put every later call of theirs out of step
    (attack11 a01)."""
    ranks = kwargs.get("ranks", args[0] if args else None)
    if not isinstance(ranks, (list, tuple, range)):
        return ""  # None (every rank), or an iterator the recorder must not consume before torch (attack27 a14)
    try:
        members = [int(r) for r in ranks]
    except (TypeError, ValueError):
        return ""
    if kwargs.get("sort_ranks", True) is not False:  # torch sorts them unless told not to (attack27 a01)
        members = sorted(members)
    made = f',"made":{_json_dumps(members)}'
    if not kwargs.get("use_local_synchronization"):
        return made
    members = sorted(set(members))
    return made + f',"group":{_json_dumps("new_group " + str(members))},"ranks":{_json_dumps(members)}'


def _wrap(name: str, original, numbered: bool):
    if name == "batch_isend_irecv":
        return _wrap_batch_p2p(original)
    positions = _positions(original, name)
    local_sync = name == "new_group"
    returns_sender = name in _RETURNS_SENDER

    @functools.wraps(original)
    def recorded(*args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth:
            return original(*args, **kwargs)
        if _not_a_member(positions, args, kwargs):
            recorder.outside(name, call_site())
            return original(*args, **kwargs)
        recorder.depth += 1
        extra = call_fields(positions, args, kwargs) + (_new_group_text(args, kwargs) if local_sync else "")
        event_id = recorder.enter("collective" if numbered else "p2p", name, numbered, call_site(), extra)
        try:
            result = original(*args, **kwargs)
        except BaseException as error:
            recorder.leave(event_id, error)
            raise
        finally:
            recorder.depth -= 1
        if returns_sender and type(result) is int and result >= 0:
            recorder.leave(event_id, extra=f',"from":{result}')
        else:
            recorder.leave(event_id)
        if name == "irecv" and kwargs.get("src", args[1] if len(args) > 1 else None) is None:
            if kwargs.get("group_src") is None and result is not None:
                _any_source.add(event_id)  # its sender is known once it is waited for (attack18 a08)
        _follow_work(recorder, result, event_id)
        return result

    recorded.__barrierlab_original__ = original
    return recorded


def _follow_work(recorder, result, event_id: int) -> None:
    """Remember the Work an async call returned, so that its ``wait()`` is recorded as that call's, and record
    its completion. The caller gets torch's own Work back (C++ code such as DDP's Join hook casts it); its
    completion is observed through its future, never by wrapping it. Its wait() is recorded even without a
    future (gloo's isend/irecv Work has none): the wait is what orders them."""
    if result is None or not hasattr(result, "get_future"):
        return
    try:
        _async_calls[result] = event_id
        result.get_future().add_done_callback(functools.partial(recorder.completed, event_id))
    except Exception:  # noqa: BLE001 - a Work without a future: completion stays unknown
        pass


def _batch_ops(p2p_op_list) -> list[tuple[str, str]] | None:
    """``dist.batch_isend_irecv``'s list of ``P2POp`` as the isend/irecv calls torch makes of them, each (name,
    the fields of its entry line): its tensor, its global peer (``P2POp.peer``) and its group. None when the
    list is not one of P2POps (torch refuses it)."""
    made = []
    try:
        for op in p2p_op_list:
            function = getattr(op.op, "__barrierlab_original__", op.op)
            name = getattr(function, "__name__", "")
            if name not in ("isend", "irecv") or type(op.peer) is not int:
                return None
            peer = "dst" if name == "isend" else "src"
            timeout = _group_timeout(op.group)
            made.append(
                (
                    name,
                    _shapes((op.tensor,), {})
                    + f',"{peer}":{op.peer}'
                    + _group_text(op.group)
                    + (f',"timeout":{timeout!r}' if timeout is not None else ""),
                )
            )
    except Exception:  # noqa: BLE001 - not a list of P2POps: torch says so
        return None
    return made or None


def _wrap_batch_p2p(original):
    """``dist.batch_isend_irecv(ops)`` recorded as the isend and irecv calls it makes, one event each (on
    gloo it calls ``isend``/``irecv`` for each ``P2POp``, under the recorder's depth, so they were not seen), and
    the Works it returns (one per op on gloo) as theirs, so that their ``wait()`` is recorded and the ordering
    model pairs them as it pairs isend/irecv. A list that is not one of P2POps is recorded as the call itself."""

    @functools.wraps(original)
    def recorded(p2p_op_list, *args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth:
            return original(p2p_op_list, *args, **kwargs)
        made = _batch_ops(p2p_op_list)
        recorder.depth += 1
        site = call_site()
        if made is None:
            made = [("batch_isend_irecv", "")]
        ids = [recorder.enter("p2p", name, False, site, extra) for name, extra in made]
        try:
            result = original(p2p_op_list, *args, **kwargs)
        except BaseException as error:
            for event_id in ids:
                recorder.leave(event_id, error)
            raise
        finally:
            recorder.depth -= 1
        for event_id in ids:
            recorder.leave(event_id)
        if isinstance(result, list) and len(result) == len(ids) and made[0][0] != "batch_isend_irecv":
            for work, event_id in zip(result, ids):
                _follow_work(recorder, work, event_id)
        return result

    recorded.__barrierlab_original__ = original
    return recorded


#: Collectives a library calls as methods of a process group, which neither ``torch.distributed``'s functions
#: nor torch's flight recorder show: gloo's ``monitored_barrier`` leaves no flight-recorder entry, so a rank
#: waiting in ``group.monitored_barrier()`` (Lightning's ``_InfiniteBarrier`` around ``prepare_data``) would be
#: seen waiting nowhere. ``dist.monitored_barrier`` calls the method inside and is recorded there, not again.
#: ``ProcessGroup.barrier`` is the c10d call under ``dist.barrier`` (which calls ``group.barrier(opts=opts)`` and
#: then ``work.wait()``): called directly it returns a Work and is recorded as an async barrier whose
#: ``work.wait()`` is what orders (attack21 a04: ``dist.group.WORLD.barrier().wait()`` was not seen at all).
GROUP_METHODS = ("monitored_barrier", "barrier")
#: The group methods that return a Work without waiting for it.
_ASYNC_GROUP_METHODS = frozenset({"barrier"})


def _wrap_group_method(name: str, original):
    """``ProcessGroup.<name>`` recorded as the collective ``name`` on that group (its members, and its
    timeout: the call's own ``timeout=``, else the group's)."""

    returns_work = name in _ASYNC_GROUP_METHODS

    @functools.wraps(original)
    def recorded_method(self, *args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth:
            return original(self, *args, **kwargs)
        recorder.depth += 1
        if returns_work:  # BarrierOptions: its timeout when set (unset, torch keeps a negative sentinel)
            given = getattr(args[0] if args else kwargs.get("opts"), "timeout", None)
        else:
            given = args[0] if args else kwargs.get("timeout")
        timeout = _seconds(given) if given is not None else None
        if returns_work and timeout is not None and timeout < 0:
            timeout = None
        timeout = _group_timeout(self) if timeout is None else timeout
        extra = _group_text(self) + (f',"timeout":{timeout!r}' if timeout is not None else "")
        if returns_work:
            extra += ',"async":true'
        event_id = recorder.enter("collective", name, True, call_site(), extra)
        try:
            result = original(self, *args, **kwargs)
        except BaseException as error:
            recorder.leave(event_id, error)
            raise
        finally:
            recorder.depth -= 1
        recorder.leave(event_id)
        if returns_work:
            _follow_work(recorder, result, event_id)
        return result

    recorded_method.__barrierlab_original__ = original
    return recorded_method


# --- what orders ranks besides collectives: Work.wait(), store keys; and what they hand over: files -------


def _run_recorded(recorder, kind: str, name: str, numbered: bool, site, extra: str, call, *args, **kwargs):
    """``call(*args, **kwargs)`` recorded as one event (its entry, then its end or error): (the event's id, what
    the call returned)."""
    recorder.depth += 1
    event_id = recorder.enter(kind, name, numbered, site, extra)
    try:
        result = call(*args, **kwargs)
    except BaseException as error:
        recorder.leave(event_id, error)
        raise
    finally:
        recorder.depth -= 1
    recorder.leave(event_id)
    return event_id, result


def _recorded_wait(recorder, name: str, of: int, call, *args, **kwargs):
    """``call(*args, **kwargs)`` recorded as a "wait" event named ``name`` of the async call ``of``."""
    return _run_recorded(recorder, "wait", name, False, call_site(callers=False), f',"of":{of}', call, *args, **kwargs)[
        1
    ]


def _wrap_work_wait(original):
    """``Work.wait`` recording the wait of an async call the learner made (waits of other Works, such as
    those torch makes inside its own functions, are not recorded)."""

    @functools.wraps(original)
    def wait(self, *args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth:
            return original(self, *args, **kwargs)
        of = _async_calls.get(self)
        if of is None:
            return original(self, *args, **kwargs)
        result = _recorded_wait(recorder, "Work.wait", of, original, self, *args, **kwargs)
        if of in _any_source:  # an irecv from any source: the rank it received from, as recv returns it
            _any_source.discard(of)
            try:
                source = self._source_rank()
                if type(source) is int and source >= 0 and recorder.fd >= 0:
                    recorder.write({"id": of, "done": time.monotonic(), "from": source})
            except Exception:  # noqa: BLE001 - the sender stays unknown
                pass
        return result

    wait.__barrierlab_original__ = original
    return wait


#: Event ids of ``irecv`` calls made without ``src`` whose wait has not returned yet: the sender is read from
#: the Work (``_source_rank()``, what ``recv`` itself returns) once it has.
_any_source: set[int] = set()


#: The futures of recorded async calls' Works (``work.get_future()``), weakly held -> the event ids of the calls
#: whose completion the future's completing implies: its own call's, for a future chained to it
#: (``future.then(f)``) the same, and for a future of several (``torch.futures.collect_all``, which
#: ``wait_all`` uses) those of each of them. A ``future.wait()`` is a wait of each call as ``work.wait()`` is.
_async_futures: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Event ids of async calls whose completion the rank has seen by polling (``work.is_completed()`` or
#: ``future.done()`` returned True): recorded once each.
_seen_complete: set[int] = set()


def _wrap_get_future(original):
    """``Work.get_future`` remembering which recorded async call the future it returns belongs to."""

    @functools.wraps(original)
    def get_future(self, *args, **kwargs):
        future = original(self, *args, **kwargs)
        of = _async_calls.get(self) if _recorder is not None else None
        if of is not None:
            _remember_future(future, (of,))
        return future

    get_future.__barrierlab_original__ = original
    return get_future


def _remember_future(future, ids: tuple[int, ...]) -> None:
    try:
        _async_futures[future] = ids
    except TypeError:  # a future that cannot be weakly held: its waits stay unrecorded
        pass


def _calls_of(future) -> tuple[int, ...]:
    """The recorded async calls whose completion ``future`` completing implies (none: not the learner's)."""
    try:
        return _async_futures.get(future, ())
    except TypeError:
        return ()


def _wrap_future_then(original):
    """``Future.then``: the future it returns completes after the one it is chained to (its callback runs
    then), so waiting for it is a wait of the same async calls (a DDP comm hook's, and torch's docs', idiom:
    ``work.get_future().then(f).wait()``)."""

    @functools.wraps(original)
    def then(self, *args, **kwargs):
        ids = _calls_of(self) if _recorder is not None else ()
        if ids and args and callable(args[0]):
            args = (_after_completion(args[0], ids), *args[1:])
        elif ids and callable(kwargs.get("callback")):
            kwargs = {**kwargs, "callback": _after_completion(kwargs["callback"], ids)}
        chained = original(self, *args, **kwargs)
        if ids:
            _remember_future(chained, ids)
        return chained

    then.__barrierlab_original__ = original
    return then


def _after_completion(callback, ids):
    """``callback`` as given to ``Future.then``: torch runs it, on a thread of its own, once the future is
    complete, so what it does comes after the async calls ``ids`` completed. Recorded as a wait of each of them
    in that thread's lane, just before it runs (attack18 a15: a file read in such a callback was a race)."""

    @functools.wraps(callback)
    def completed(*args, **kwargs):
        recorder = _recorder
        if recorder is not None and not recorder.depth and recorder.fd >= 0:
            for of in ids:
                try:
                    _run_recorded(recorder, "wait", "Future.then", False, None, f',"of":{of}', _nothing)
                except Exception:  # noqa: BLE001 - recording never reaches the learner's code
                    break
        return callback(*args, **kwargs)

    return completed


def _nothing() -> None:
    return None


def _wrap_collect_all(original):
    """``torch._C._collect_all`` (under ``torch.futures.collect_all`` and ``wait_all``): the future it returns
    completes once every future given has, so waiting for it is a wait of each of their async calls."""

    @functools.wraps(original)
    def collect_all(futures, *args, **kwargs):
        collected = original(futures, *args, **kwargs)
        if _recorder is not None:
            try:
                ids = tuple(dict.fromkeys(i for future in futures for i in _calls_of(future)))
            except TypeError:  # not a list of futures: torch has already refused it
                ids = ()
            if ids:
                _remember_future(collected, ids)
        return collected

    collect_all.__barrierlab_original__ = original
    return collect_all


def _wrap_future_wait(original):
    """``Future.wait`` recording the wait of the async call whose future it is (as ``Work.wait``), or of each
    call a chained or collected future stands for (the first waited for, the others seen complete as it
    returns: a wait of no length each); the waits of every other future (RPC, the learner's own) pass through
    untouched."""

    @functools.wraps(original)
    def wait(self, *args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth:
            return original(self, *args, **kwargs)
        ids = _calls_of(self)
        if not ids:
            return original(self, *args, **kwargs)
        recorder.depth += 1
        try:
            site = call_site(callers=False)
            event_id = recorder.enter("wait", "Future.wait", False, site, f',"of":{ids[0]}')
            try:
                result = original(self, *args, **kwargs)
            except BaseException as error:
                recorder.leave(event_id, error)
                raise
            recorder.leave(event_id)
            for of in ids[1:]:
                recorder.leave(recorder.enter("wait", "Future.wait", False, site, f',"of":{of}'))
        finally:
            recorder.depth -= 1
        return result

    wait.__barrierlab_original__ = original
    return wait


def _wrap_completion_poll(name: str, calls, original):
    """``Work.is_completed`` / ``Future.done``: the first True for a recorded async call is recorded as a wait
    of no length (the rank saw the work complete; reading its result after that is ordered, as after a
    ``wait()``). A False is not recorded: a polling loop costs one lookup a poll."""

    @functools.wraps(original)
    def poll(self, *args, **kwargs):
        done = original(self, *args, **kwargs)
        recorder = _recorder
        if done is not True or recorder is None or recorder.depth:
            return done
        try:
            of = calls.get(self)
        except TypeError:
            of = None
        ids = [i for i in (of if isinstance(of, tuple) else (of,)) if i is not None and i not in _seen_complete]
        if not ids:
            return done
        _seen_complete.update(ids)
        recorder.depth += 1
        try:
            site = call_site(callers=False)
            for i in ids:
                recorder.leave(recorder.enter("wait", name, False, site, f',"of":{i}'))
        finally:
            recorder.depth -= 1
        return done

    poll.__barrierlab_original__ = original
    return poll


#: ``torch.distributed.Store`` methods recorded, and what each records besides the key(s): ``add`` its
#: amount and the count it returned, ``get`` the first bytes of the value it returned, ``check`` whether every
#: key was there ("True"/"False"). ``delete_key`` ends a key's use (a key reused each step, attack11 a03),
#: ``check`` polled until True orders like ``wait`` (a14).
STORE_METHODS = (
    "set",
    "add",
    "get",
    "wait",
    "compare_set",
    "delete_key",
    "check",
    # attack12 r10: handoffs through these were reported as races (only the other side was recorded)
    "multi_set",
    "multi_get",
    "append",
    "queue_push",
    "queue_pop",
)
STORE_VALUE_KEPT = 64


#: torch's store helpers that a learner calls as a barrier of their own (``torch.distributed.elastic.utils.store.
#: barrier``: an ``add`` per rank, a ``set`` by the last, a ``wait`` on every rank): their store calls are the
#: learner's (round 14: a file handed over through one was reported as a race).
_STORE_HELPERS = (os.path.join("torch", "distributed", "elastic", "utils", "store.py"),)


#: torch functions that make a barrier of store calls: called by torch (init_process_group, new_group) their calls
#: are torch's; called by the learner's code itself (checkpoint-engine's ``ParameterServer.store_based_barrier``
#: calls ``distributed_c10d._store_based_barrier`` with a group name of its own, corpus round 41) they are the
#: learner's hand-off, and the ordering model orders by them as by the learner's own store calls.
_STORE_BARRIERS = frozenset({"_store_based_barrier"})

#: torch's logging decorators (``_time_logger`` around ``_store_based_barrier``): a frame between a torch function
#: and its caller.
_TORCH_LOGGERS = (os.path.join("torch", "distributed", "c10d_logger.py"),)


def _called_by_torch() -> bool:
    """The store method's caller is torch's own Python code (init_process_group, new_group, DCP) or the
    launcher's (its start-up rendezvous, which is no edge of the learner's run) - not one of torch's store
    helpers the learner called (:data:`_STORE_HELPERS`, :data:`_STORE_BARRIERS`)."""
    frame = sys._getframe(2)
    caller = frame.f_code.co_filename
    if caller in _LAUNCHER:
        return True
    if not caller.startswith(_TORCH_PREFIX) or caller.endswith(_STORE_HELPERS):
        return False
    if frame.f_code.co_name in _STORE_BARRIERS:
        outer = frame.f_back
        while outer is not None and outer.f_code.co_filename.endswith(_TORCH_LOGGERS):  # its logging decorator
            outer = outer.f_back
        return (
            outer is None or outer.f_code.co_filename.startswith(_TORCH_PREFIX) or outer.f_code.co_filename in _LAUNCHER
        )
    return True


#: The ``PrefixStore``s the learner's code made -> (their prefix, the store they wrap): a key is recorded with
#: the prefixes it has in the store (one ``PrefixStore`` per step or per phase is what keeps keys apart,
#: attack11 a22/a22b). The stores torch makes (the default group's) keep their keys bare.
_PREFIXES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _wrap_prefix_store_init(original):
    @functools.wraps(original)
    def recorded_init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if _recorder is None or _called_by_torch():
            return
        prefix = args[0] if args else kwargs.get("prefix")
        store = args[1] if len(args) > 1 else kwargs.get("store")
        if isinstance(prefix, str):
            with contextlib.suppress(TypeError):  # a store that takes no weak reference keeps its keys bare
                _PREFIXES[self] = (prefix, store)

    recorded_init.__barrierlab_original__ = original
    return recorded_init


def _key_prefix(store) -> str:
    """What a ``PrefixStore`` made by the learner puts before its keys ("train/step1/"), "" for other stores."""
    found = ""
    for _ in range(64):
        try:
            prefix, store = _PREFIXES[store]
        except (KeyError, TypeError):
            break
        found = f"{prefix}/{found}"
    return found


def _process_local(store) -> bool:
    """``store`` (or the store a ``PrefixStore`` of the learner's wraps) is a ``HashStore``: this process's own,
    so its keys order nothing between ranks, whatever their names (attack18 a11: a key set in a rank's private
    HashStore was taken as releasing another rank's wait on the group's store)."""
    for _ in range(64):
        if isinstance(store, dist.HashStore):
            return True
        try:
            store = _PREFIXES[store][1]
        except (KeyError, TypeError):
            return False
    return False


def _wrap_store(method: str, original):
    @functools.wraps(original)
    def recorded_store(self, *args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth or _called_by_torch() or _process_local(self):
            return original(self, *args, **kwargs)
        keys = args[0] if args else kwargs.get("keys", kwargs.get("key"))
        keys = [keys] if isinstance(keys, (str, bytes)) else list(keys or ())
        prefix = _key_prefix(self) if _PREFIXES else ""
        keys = [prefix + (k.decode(errors="replace") if isinstance(k, bytes) else str(k)) for k in keys[:16]]
        extra = ',"keys":' + _json_dumps(keys)
        if method == "add" and len(args) > 1 and isinstance(args[1], int):
            extra += f',"amount":{args[1]}'
        written = (
            args[1]
            if method in ("set", "append", "queue_push") and len(args) > 1  # what an append or a push adds
            else args[2]
            if method == "compare_set" and len(args) > 2
            else None
        )
        if isinstance(written, (str, bytes)) and len(written) < STORE_VALUE_KEPT:  # a short value, whole
            text = written.decode(errors="replace") if isinstance(written, bytes) else written
            extra += ',"written":' + _json_dumps(text)
        recorder.depth += 1
        event_id = recorder.enter("store", method, False, call_site(callers=False), extra)
        try:
            result = original(self, *args, **kwargs)
        except BaseException as error:
            recorder.leave(event_id, error)
            raise
        finally:
            recorder.depth -= 1
        if method == "add" and isinstance(result, int):
            recorder.leave(event_id, extra=f',"value":{_json_dumps(str(result))}')
        elif method == "check" and isinstance(result, bool):
            recorder.leave(event_id, extra=f',"value":"{result}"')
        elif method in ("get", "compare_set", "queue_pop") and isinstance(result, bytes):  # compare_set: after it
            value = result[:STORE_VALUE_KEPT].decode(errors="replace")
            recorder.leave(event_id, extra=f',"value":{_json_dumps(value)}')
        else:
            recorder.leave(event_id)
        return result

    recorded_store.__barrierlab_original__ = original
    return recorded_store


#: Paths never recorded: the interpreter's and the system's files, and the rank's own record.
_SYSTEM_PREFIXES = tuple(
    {
        "/proc/",
        "/dev/",
        "/sys/",
        sysconfig.get_paths()["stdlib"] + os.sep,
        sysconfig.get_paths()["purelib"] + os.sep,
        sysconfig.get_paths()["platlib"] + os.sep,
        _TORCH_PREFIX,
    }
)
_SYSTEM_PARTS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep, os.sep + "__pycache__" + os.sep)
#: Compiled code, never a handoff (a generated ``.py`` file is: it is recorded when the learner's own code opens
#: it, attack18 a19).
_CODE_SUFFIXES = (".pyc", ".so")
#: RAM-backed files, the usual place to stage data between processes of one machine: not "system" paths (a19).
_SHARED_MEMORY = "/dev/shm/"
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_TMPFILE = getattr(os, "O_TMPFILE", 0) or -1  # -1: never all set (no O_TMPFILE on this system)
_main_thread = threading.main_thread().ident
_own_folder: str = ""


def _learner_path(path) -> str | None:
    """The absolute path if it is one of the learner's files, else None."""
    if isinstance(path, int):
        return None
    try:
        path = os.fspath(path)
    except TypeError:
        return None
    if isinstance(path, bytes):
        path = path.decode(errors="replace")
    if path.endswith(_CODE_SUFFIXES):  # normalising never changes a name's suffix: no need to
        return None
    try:
        path = os.path.abspath(path)
    except OSError:
        # a relative path while the working folder was removed (os.getcwd() raises FileNotFoundError): not
        # recorded. Called from the audit hook, which must never raise: it made the learner's os.listdir(".")
        # fail with ENOENT in a rank while a plain process (glibc reads a removed folder as empty) lists []
        return None
    if path.startswith(_SYSTEM_PREFIXES) and not path.startswith(_SHARED_MEMORY):
        return None
    if any(part in path for part in _SYSTEM_PARTS):
        return None
    if _own_folder and _own_folder in (path, os.path.dirname(path)):
        return None
    return path


#: Absolute path as the rank gave it -> the JSON text of the learner's path, or "" (not the learner's file):
#: a path's answer depends on nothing else while one recording lasts, and ranks open the same files again.
_quoted_paths: dict[str, str] = {}
#: The JSON text of a learner's path (a value of ``_quoted_paths``) -> the path: an open need not parse it back.
_plain_paths: dict[str, str] = {}
_PATHS_KEPT = 4096


def _quoted_path(path) -> str | None:
    """``_learner_path`` as JSON text, cached for absolute ``str`` paths (the form ``open`` gets most)."""
    if type(path) is str and path.startswith("/"):
        quoted = _quoted_paths.get(path)
        if quoted is None:
            if len(_quoted_paths) >= _PATHS_KEPT:
                _quoted_paths.clear()
                _plain_paths.clear()
            learners = _learner_path(path)
            quoted = _quoted_paths[path] = "" if learners is None else _json_dumps(learners)
            if learners is not None:
                _plain_paths[quoted] = learners
        return quoted or None
    learners = _learner_path(path)
    return None if learners is None else _json_dumps(learners)


def _file_event(name: str, path: str, to: str | None = None, renamed=None, value: str | None = None) -> int | None:
    """``path``, ``to``: JSON text; ``renamed``: the path a rename moves, as the rank gave it; ``value``:
    ``"missing"`` for a read of a path that did not exist when it was opened, ``"update"`` for an open for writing
    that did not truncate the file, ``"truncate"`` for ``os.truncate``. Returns the event's id (None for a rename)."""
    extra = ',"path":' + path
    if to is not None:
        extra += ',"to":' + to
    if value is not None:
        extra += f',"value":"{value}"'
    recorder = _recorder
    recorder.depth += 1  # sys._getframe is audited too
    try:
        if name == "rename":  # with the size of the file renamed: was it fully written (flushed) by then?
            event_id = recorder.enter("file", name, False, _learner_site(), extra, flush=False)
            try:
                size = os.stat(renamed).st_size
            except OSError:
                recorder.leave(event_id)
            else:
                recorder.leave(event_id, extra=f',"value":"{size}"')
        else:
            return recorder.instant("file", name, _learner_site(), extra)
    finally:
        recorder.depth -= 1
    return None


#: ``os.stat`` as it was: the recorder's own checks are not the learner's polls, and they skip the stat wrapper's
#: look for the learner's caller (a third of a recorded open's cost, benchmarks/record.py, 2026-12-05).
_stat = os.stat


def _path_lexists(path) -> bool:
    """``os.path.lexists`` (a dangling link is there) through ``os.lstat``, which the recorder does not wrap."""
    try:
        os.lstat(path)
    except (OSError, ValueError, TypeError):
        return False
    return True


def _path_exists(path) -> bool:
    """``os.path.exists`` through the unwrapped ``os.stat``."""
    try:
        _stat(path)
    except (OSError, ValueError):
        return False
    return True


#: (thread, path as JSON text) -> whether the last recorded look of that thread found it, and the rank's count of
#: ordering events then: a poll is recorded when what it finds changes (a loop of a thousand misses is one event),
#: or when the rank made an ordering call since (attack18 a03: a racing look after an ordered one with the same
#: answer was not recorded, so the race was missed).
_looked: dict[tuple, tuple[bool, int]] = {}


def _wrap_exists(original):
    """``os.path.exists``/``isfile`` and ``Path.exists``/``is_file``, recording a look at a learner's path
    (kind "file", name "exists", with value "missing" when it was not there) when its answer differs from
    this rank's last recorded look at that path. A rank that waits for a file to appear leaves a miss, then a
    find: what :mod:`barrierlab.ordering` needs to order a file published by ``os.replace`` before its reader."""

    @functools.wraps(original)
    def look(*args, **kwargs):
        found = original(*args, **kwargs)
        recorder = _recorder
        if recorder is None or recorder.depth or recorder.fd < 0 or not args or not isinstance(found, bool):
            return found
        if not _library_caller():  # not pathlib's own is_dir() inside mkdir(exist_ok=True)
            _record_look(recorder, args[0], found)
        return found

    look.__barrierlab_original__ = original
    return look


def _wrap_stat_look(original):
    """``os.stat``/``os.path.getsize``/``getmtime`` called by the learner's own code (a wait for a file
    written by ``while True: try: os.stat(p)``): a look like :func:`_wrap_exists`'s, missing when the call
    raised ``FileNotFoundError`` (attack14 a03: the same wait through ``os.stat`` was a false race)."""

    @functools.wraps(original)
    def look(*args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth or recorder.fd < 0 or not args or _library_caller():
            return original(*args, **kwargs)
        if isinstance(args[0], int) or kwargs.get("dir_fd") is not None:
            return original(*args, **kwargs)  # a descriptor, or a path relative to one: not a path we can key
        try:
            result = original(*args, **kwargs)
        except FileNotFoundError:
            _record_look(recorder, args[0], False)
            raise
        _record_look(recorder, args[0], True)
        return result

    look.__barrierlab_original__ = original
    return look


def _record_look(recorder, target, found: bool) -> None:
    """Record that this thread looked for ``target`` and found it or not, when that differs from its last look
    (frames: this one, the wrapper, then the learner's call)."""
    try:
        path = _quoted_path(os.path.abspath(os.fspath(target)))
        if not found and os.path.lexists(target):
            return  # isfile of a folder (or exists of a dangling link): something is there, not a miss
    except (TypeError, ValueError, OSError):
        return
    try:
        key = (threading.get_ident(), path)  # each thread's looks are its own (its lane's)
        state = (found, recorder.orderings)
        if path is None or _looked.get(key) == state:
            return
        if len(_looked) >= _PATHS_KEPT:
            _looked.clear()
        _looked[key] = state
        recorder.depth += 1
        try:
            site = _learner_site_from(sys._getframe(2))
            recorder.instant("file", "exists", site, ',"path":' + path + ("" if found else ',"value":"missing"'))
        finally:
            recorder.depth -= 1
    except Exception:  # noqa: BLE001 - recording never reaches the learner's code
        pass


#: (thread, folder) -> the names this thread's last listing of that folder found (folders of at most
#: :data:`_LISTED_KEPT` entries; at most :data:`_PATHS_KEPT` folders, then forgotten).
_listed: dict[tuple[int, str], frozenset] = {}
_LISTED_KEPT = 256


def _record_listing(recorder, folder, names, pattern: str = "") -> None:
    """A listing of ``folder`` (``os.listdir``, ``glob.glob``) found ``names``. A listing polled until an entry
    appears is a wait for that entry, as ``os.path.exists`` polled is: each entry that this thread's last
    listing of the folder did not have is recorded as a miss, then a find, and one it had and this one lacks as
    a miss (attack18 a01, a02: a marker waited for through a listing was a race). A thread's first listing of a
    folder is only remembered."""
    try:
        folder = os.path.abspath(os.fspath(folder))
        if len(names) > _LISTED_KEPT or not isinstance(folder, str):
            return
        now = frozenset(os.fsdecode(n) for n in names)
        key = (threading.get_ident(), folder + "\0" + pattern)  # a glob's own pattern: its own listing
        before = _listed.get(key)
        if len(_listed) >= _PATHS_KEPT:
            _listed.clear()
        _listed[key] = now
        if before is None or before == now:
            return
        site = _learner_site_from(sys._getframe(2))
        recorder.depth += 1
        try:
            for name in sorted(now - before):
                path = _quoted_path(os.path.join(folder, name))
                if path is None:
                    continue
                for found in (False, True):
                    value = "" if found else ',"value":"missing"'
                    recorder.instant("file", "exists", site, ',"path":' + path + value)
                    _looked[(key[0], path)] = (found, recorder.orderings)
            for name in sorted(before - now):
                path = _quoted_path(os.path.join(folder, name))
                if path is not None and _looked.get((key[0], path)) != (False, recorder.orderings):
                    recorder.instant("file", "exists", site, ',"path":' + path + ',"value":"missing"')
                    _looked[(key[0], path)] = (False, recorder.orderings)
        finally:
            recorder.depth -= 1
    except Exception:  # noqa: BLE001 - recording never reaches the learner's code
        pass


def _wrap_listing(pattern: bool, original):
    """``os.listdir`` and (``pattern``) ``glob.glob`` called by the learner's own code: what they found, for
    :func:`_record_listing` (``glob``: the pattern's folder, when its last part alone has wildcards)."""

    @functools.wraps(original)
    def listing(*args, **kwargs):
        found = original(*args, **kwargs)
        recorder = _recorder
        if recorder is None or recorder.depth or recorder.fd < 0 or _library_caller():
            return found
        try:
            if not pattern:
                folder = args[0] if args else kwargs.get("path", ".")
                if isinstance(folder, (str, bytes, os.PathLike)) and isinstance(found, list):
                    _record_listing(recorder, folder, found)
            elif args and isinstance(args[0], str) and isinstance(found, list):
                folder, last = os.path.split(args[0])
                if folder and not any(c in folder for c in "*?[") and all(isinstance(p, str) for p in found):
                    _record_listing(recorder, folder, [os.path.basename(p) for p in found], last)
        except Exception:  # noqa: BLE001
            pass
        return found

    listing.__barrierlab_original__ = original
    return listing


def _learner_site() -> tuple | None:
    """The innermost frame that is the learner's (not torch, the standard library or barrierlab's
    machinery): the line that called ``open`` even through ``shutil``/``json``/``pathlib``. (Frames: this one,
    ``_file_event``, ``_record_access``, the audit hook, then the call that opened.)"""
    return _learner_site_from(sys._getframe(4))


def _learner_site_from(frame) -> tuple | None:
    while frame is not None:
        code = frame.f_code  # read once per frame: each read of f_code is an audit event
        if is_learners(code.co_filename):
            return (code.co_filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None


def _audit(event: str, args: tuple) -> None:
    """Audit hook (installed once per process, inert while nothing records): the learner's file handoffs, and
    the moments pending lines must be written (the rank is about to sleep, signal a process or exec)."""
    if event not in _AUDITED:
        return
    if event == "os.exec" and before_exec is not None:
        before_exec(args)
    recorder = _recorder
    if recorder is None:
        return
    if event in _WRITE_BEFORE:
        recorder.flush()
        return
    if recorder.depth or recorder.fd < 0:
        return
    try:
        _record_access(event, args)
    except Exception:  # noqa: BLE001 - an audit hook that raises makes the learner's call raise: never
        pass


#: The ``dir_fd`` of the ``os.open`` a thread is in: its audit event ("open") carries no ``dir_fd``, so a relative
#: name opened in a folder's descriptor would be recorded as the working folder's file (attack13 a16).
_open_dir_fd = threading.local()


def _wrap_open(original):
    """``open`` (``builtins.open``, ``io.open``), handing the file object it returns to the recorder for the open
    its audit event just recorded (:meth:`_Recorder.bind`): what is returned is ``open``'s own object."""

    @functools.wraps(original)
    def opened(*args, **kwargs):
        recorder = _recorder
        thread = recorder._thread if recorder is not None else None
        outer = thread is not None and not thread.in_open
        if outer:
            thread.in_open = True
        try:
            file = original(*args, **kwargs)
        except BaseException as error:
            if thread is not None and outer:
                thread.pending = None
                _exclusive_done(recorder, thread, None if isinstance(error, FileExistsError) else False)
            raise
        finally:
            if outer:
                thread.in_open = False
        if outer and thread.exclusive is not None:
            _exclusive_done(recorder, thread, True)
        if recorder is not None and recorder._thread.pending is not None:
            try:
                recorder.bind(file)
            except Exception:  # noqa: BLE001 - following the file never reaches the learner's call
                pass
        return file

    opened.__barrierlab_original__ = original
    return opened


def _exclusive_done(recorder, thread: _PerThread, created: bool | None) -> None:
    """Record the exclusive create ``thread`` was making (``open(p, "x")``), now that it returned: a write of the
    file it ``created``; a look that found it there when it failed with FileExistsError (None); nothing when it
    failed otherwise (False). attack22 a04: the loser of two ranks' exclusive creates was "opened for writing",
    racing the winner, although it changed nothing."""
    made, thread.exclusive = thread.exclusive, None
    if made is None or created is False or recorder.depth or recorder.fd < 0:
        return
    path, name, write_only = made
    try:
        if created is None:
            _file_event("exists", path, value=EXCLUSIVE)
            return
        event_id = _file_event("write", path, value=EXCLUSIVE)
        if event_id is not None:
            recorder.opened(path, name, event_id, write_only, False)
    except Exception:  # noqa: BLE001 - recording never reaches the learner's code
        pass


def _wrap_os_open(original):
    @functools.wraps(original)
    def opened(path, flags, mode=0o777, *, dir_fd=None):
        if dir_fd is None:
            return original(path, flags, mode)
        _open_dir_fd.fd = dir_fd
        try:
            return original(path, flags, mode, dir_fd=dir_fd)
        finally:
            _open_dir_fd.fd = None

    opened.__barrierlab_original__ = original
    return opened


def _at(path, dir_fd):
    """``path`` as the call meant it: a relative path given with ``dir_fd`` (``os.unlink(name, dir_fd=fd)``, as
    ``shutil.rmtree`` removes a folder's files) joined to that descriptor's folder (``/proc/self/fd``), not to the
    working folder (attack12 r9: a removal inside a checkpoint folder was recorded as one of the working
    folder's file of that name). None when the folder cannot be known."""
    if dir_fd is None or dir_fd == -1 or not isinstance(dir_fd, int):
        return path
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str):
        return None
    if os.path.isabs(path):
        return path
    try:
        return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
    except OSError:
        return None


def _opened_by_learner() -> bool:
    """Whether the code that called ``open`` (the first frame above the audit hook that is not barrierlab's
    recorder) is the learner's own, not the standard library's or a library's."""
    frame = sys._getframe(3)  # this, _record_access, the audit hook, then the caller
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame is not None and is_learners(frame.f_code.co_filename)


def _record_access(event: str, args: tuple) -> None:
    """A file access of the learner's, from any thread of the rank (each thread's events in its own lane)."""
    if sys._getframe(2).f_code.co_filename.startswith(_IMPORT_SYSTEM):
        return  # the import system reading a module or listing a folder of sys.path: not the learner's handoff
    if event == "open":
        dir_fd = getattr(_open_dir_fd, "fd", None)
        name = _at(args[0], dir_fd) if dir_fd is not None else args[0]
        path = _quoted_path(name) if name is not None else None
        if path is None:
            return
        if path.endswith('.py"') and not _opened_by_learner():
            return  # a traceback, inspect or a compiler reading the learner's source: not a handoff
        mode, flags = args[1], args[2]
        if not isinstance(mode, str) and isinstance(flags, int) and flags & _TMPFILE == _TMPFILE:
            return  # O_TMPFILE: an unnamed file in that folder (FileLock's probe); the folder is not changed
        if isinstance(mode, str):
            exclusive = "x" in mode
            # "a+" reads too: what it reads depends on the others' appends, so it is compared as a write that
            # keeps the file (attack22 a06: a read through "a+" was an append, and appends never conflict)
            how = "append" if "a" in mode and "+" not in mode else "write" if any(c in mode for c in "awx+") else "read"
        elif flags & os.O_APPEND and not flags & os.O_TRUNC and flags & os.O_ACCMODE == os.O_WRONLY:
            exclusive, how = False, "append"
        else:
            exclusive = isinstance(flags, int) and flags & (os.O_CREAT | os.O_EXCL) == os.O_CREAT | os.O_EXCL
            how = "write" if flags & _WRITE_FLAGS else "read"
        if exclusive and isinstance(mode, str) and _recorder._thread.in_open:
            # recorded as the open returns (:func:`_exclusive_done`): whether it created the file is known then
            _recorder._thread.exclusive = (path, name, "+" not in mode and "r" not in mode)
            return
        if exclusive and _path_lexists(name):
            # an exclusive create of a path that is there fails and changes nothing: a look that found it
            # (attack22 a04: the loser of open(p, "x") was "opened for writing", racing the winner)
            _file_event("exists", path, value=EXCLUSIVE)
            return
        # a read of a file that is not there yet (the open raises next): marked, so that a race says "tried to read"
        missing = how == "read" and not _path_exists(name)  # (a descriptor has no path: returned above)
        # an open for writing that keeps what the file holds ("r+", O_RDWR without O_TRUNC: a lock file's): marked
        update = how == "write" and ("w" not in mode if isinstance(mode, str) else not flags & os.O_TRUNC)
        value = EXCLUSIVE if exclusive else "missing" if missing else "update" if update else None
        event_id = _file_event(how, path, value=value)
        if not missing and event_id is not None:
            if isinstance(mode, str):
                write_only = how != "read" and "+" not in mode and "r" not in mode
            else:
                write_only = isinstance(flags, int) and flags & os.O_ACCMODE == os.O_WRONLY
            _recorder.opened(path, name, event_id, write_only, how == "read")
    elif event == "mmap.__new__":
        # a file mapped for reading (numpy's np.load(mmap_mode="r"), np.memmap, mmap.mmap): its bytes are read
        # whenever the mapping is used, after the open returned, so it is recorded as torch.load(mmap=True) is,
        # a read through a mapping that lasts (attack26 a07: rank 0 rewrote the file after a barrier and rank 1
        # read the new values through the mapping it made before, with no race reported). A mapping that can
        # write (ACCESS_WRITE, or the default on a file opened for writing) is not modelled.
        fileno, access = args[0], args[2]
        if not isinstance(fileno, int) or fileno < 0 or access not in (mmap.ACCESS_READ, mmap.ACCESS_COPY):
            return
        name = _names(str(fileno))
        path = _quoted_path(name) if name is not None and name.startswith("/") else None
        if path is not None:
            _file_event("read", path, value="mmap")
    elif event == "os.rename":
        source, target = _quoted_path(_at(args[0], args[2])), _quoted_path(_at(args[1], args[3]))
        if source is not None or target is not None:
            _file_event(
                "rename",
                source or _json_dumps(_fspath_text(args[0])),
                target or _json_dumps(_fspath_text(args[1])),
                renamed=args[0],
            )
    elif event in ("os.remove", "os.rmdir"):  # os.unlink too; shutil.rmtree removes each file by name in a folder's
        # descriptor, then the folder (attack14 a14)
        name = _at(args[0], args[1])
        path = _quoted_path(name) if name is not None else None
        if path is not None:
            # a path that is not there is not removed: the call fails (suppressed, or unlink(missing_ok=True)), a
            # look that found nothing (attack22 a03: two ranks' clean-up of a file that never existed raced)
            _file_event("remove", path) if _path_lexists(name) else _file_event("exists", path, value="missing")
    elif event == "os.truncate":  # os.truncate(path, n) changes the file in place (a descriptor has no path)
        if isinstance(args[0], (str, bytes, os.PathLike)):
            path = _quoted_path(args[0])
            if path is not None:
                _file_event("write", path, value="truncate")
    elif event in ("os.symlink", "os.link"):  # a new name made whole at once (huggingface_hub's cache): attack14 a01
        path = _quoted_path(_at(args[1], args[2] if event == "os.symlink" else args[3]))
        if path is not None:
            _file_event("write", path, value="link")
    elif event == "os.mkdir":  # os.makedirs too, once per folder it makes (and for the last even if it exists)
        path = _quoted_path(_at(args[0], args[2]))
        if path is not None:  # one already there is not made: the call fails, or makedirs(exist_ok=True) goes on
            _file_event("ensure" if _path_exists(args[0]) else "mkdir", path)
    else:  # os.listdir, os.scandir (glob, os.walk): a read of the folder's entries
        path = _quoted_path(args[0] if args and args[0] is not None else ".")
        if path is not None:
            _file_event("list", path)


# --- what orders a rank's threads and forked children with its own code, and file locks -------------------


def _caller_site(depth: int = 2) -> tuple | None:
    try:
        return _learner_site_from(sys._getframe(depth))
    except ValueError:  # called from C with no Python frame above
        return None


def _wrap_thread_start(original):
    """``Thread.start``: an event "start" (kind "sync") in the starting thread's lane, naming the lane of the
    thread it starts (``child``): that thread's events are ordered after it, and nothing else orders them with
    the starting thread's until a ``join`` (attack11 a11: a writer thread not joined before the barrier)."""

    @functools.wraps(original)
    def start(self, *args, **kwargs):
        recorder = _recorder
        if recorder is not None and not recorder.depth and recorder.fd >= 0:
            try:
                if self.ident is None and not self.name.startswith(_MACHINERY_THREADS):
                    self._barrierlab_lane = None  # a lane of its own, numbered now
                    label = recorder.thread_lane(self)
                    recorder.depth += 1
                    try:
                        recorder.instant("sync", "start", _caller_site(), ',"child":' + _json_dumps(label))
                    finally:
                        recorder.depth -= 1
            except Exception:  # noqa: BLE001 - recording never reaches the learner's code
                pass
        return original(self, *args, **kwargs)

    start.__barrierlab_original__ = original
    return start


def _wrap_thread_join(original):
    """``Thread.join``: once it returns with the thread ended, an event "join" (kind "sync") in the joining
    thread's lane: every event of the joined thread is ordered before it. A join that timed out records
    nothing."""

    @functools.wraps(original)
    def join(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        recorder = _recorder
        if recorder is not None and not recorder.depth and recorder.fd >= 0:
            try:
                label = getattr(self, "_barrierlab_lane", None)
                if label is not None and not getattr(self, "_barrierlab_joined", False) and not self.is_alive():
                    self._barrierlab_joined = True
                    recorder.depth += 1
                    try:
                        recorder.instant("sync", "join", _caller_site(), ',"child":' + _json_dumps(label))
                    finally:
                        recorder.depth -= 1
            except Exception:  # noqa: BLE001
                pass
        return result

    join.__barrierlab_original__ = original
    return join


#: Numbers given to ``concurrent.futures`` futures as their work ends (their "resolve" and "result" events name it).
_future_numbers = itertools.count(1)


def _wrap_future_resolve(original):
    """``concurrent.futures.Future.set_result``/``set_exception`` (a ``ThreadPoolExecutor``'s worker ends a task): an
    event "resolve" (kind "sync") in the worker's lane before the future is set, naming it (``future``)."""

    @functools.wraps(original)
    def resolve(self, *args, **kwargs):
        recorder = _recorder
        if recorder is not None and not recorder.depth and recorder.fd >= 0:
            try:
                if not self.done():
                    _record_resolve(recorder, self)
            except Exception:  # noqa: BLE001
                pass
        return original(self, *args, **kwargs)

    resolve.__barrierlab_original__ = original
    return resolve


def _wrap_future_result(original):
    """``concurrent.futures.Future.result``/``exception``: once it has the outcome (returned it, or raised the
    task's exception), an event "result" (kind "sync") in the caller's lane naming the future: the task's events
    (before its "resolve") are ordered before it. The first such call per thread is recorded; a timeout or a
    cancelled future records nothing. (``executor.submit(save).result()`` before a barrier orders the save.)"""

    @functools.wraps(original)
    def result(self, *args, **kwargs):
        try:
            return original(self, *args, **kwargs)
        finally:
            recorder = _recorder
            if recorder is not None and not recorder.depth and recorder.fd >= 0:
                try:
                    _record_result(recorder, self)
                except Exception:  # noqa: BLE001
                    pass

    result.__barrierlab_original__ = original
    return result


def _record_resolve(recorder: _Recorder, given, name: str = "resolve") -> None:
    """A "resolve" event (or ``name``: "signal") naming ``given`` (a future, event or queue, or a Condition's or
    Queue's signals: a number of its own, kept on it)."""
    number = given.__dict__.get("_barrierlab_future")
    if number is None:
        number = given._barrierlab_future = next(_future_numbers)
    recorder.instant("sync", name, None, f',"future":{number}')


def _record_taken(recorder: _Recorder, given, site_depth: int, once: bool = True) -> None:
    """A "result" event naming ``given`` once it was taken (the first time per thread, or every time unless
    ``once``), if it was ever given."""
    number = given.__dict__.get("_barrierlab_future")
    if number is None:
        return
    if once:
        seen = given.__dict__.setdefault("_barrierlab_seen", set())
        ident = threading.get_ident()
        if ident in seen:
            return
        seen.add(ident)
    recorder.depth += 1
    try:
        recorder.instant("sync", "result", _caller_site(site_depth), f',"future":{number}')
    finally:
        recorder.depth -= 1


def _record_result(recorder: _Recorder, future) -> None:
    if future.done() and not future.cancelled():
        _record_taken(recorder, future, 4)


#: The standard library's folder: an Event or Queue that threading, multiprocessing or concurrent.futures use
#: for themselves (a thread's "started" event, set before the thread is known to threading) is not a handoff of
#: the learner's.
_STDLIB_PREFIX = os.path.dirname(threading.__file__) + os.sep


_OWN_PREFIX = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _caller_file(depth: int) -> str:
    """The file of the code that made the wrapped call, ``depth`` frames up from the asker's caller."""
    frame = sys._getframe(depth + 1)
    code = frame.f_code
    if code is _STAND_IN_CALL:  # called through the wrapper's stand-in: its caller is the one asked about
        code = frame.f_back.f_code
    return code.co_filename


def _library_caller(depth: int = 2) -> bool:
    """The wrapped call was made by the standard library's, torch's or barrierlab's own code, not the learner's."""
    return _caller_file(depth).startswith((_STDLIB_PREFIX, _TORCH_PREFIX, _OWN_PREFIX, "<frozen "))  # frozen: os


def _wrap_handoff_give(original):
    """``threading.Event.set`` and ``queue.Queue.put`` (one thread hands another what it finished): an event
    "resolve" (kind "sync") in the giving thread's lane, naming the object (``future``: a number of its own),
    before the call. The ordering model orders the first such event before a take that succeeded (attack13 a03:
    a file a thread wrote before ``done.set()`` was a race for the rank that read it after ``done.wait()`` and a
    barrier)."""

    @functools.wraps(original)
    def give(self, *args, **kwargs):
        recorder = _recorder
        if recorder is not None and not recorder.depth and recorder.fd >= 0 and not _library_caller():
            try:
                _record_resolve(recorder, self)
            except Exception:  # noqa: BLE001
                pass
        return original(self, *args, **kwargs)

    give.__barrierlab_original__ = original
    return give


def _wrap_handoff_take(original):
    """``threading.Event.wait``/``is_set`` that found the event set, ``queue.Queue.get`` that returned an item:
    an event "result" (kind "sync") in the taking thread's lane naming the object, once per thread. The first
    give came before it: the event was set, or an item put, before the take could succeed."""

    @functools.wraps(original)
    def take(self, *args, **kwargs):
        got = original(self, *args, **kwargs)
        recorder = _recorder
        if got is not False and recorder is not None and not recorder.depth and not _library_caller():
            try:
                if recorder.fd >= 0:
                    _record_taken(recorder, self, 3)
            except Exception:  # noqa: BLE001
                pass
        return got

    take.__barrierlab_original__ = original
    return take


def _signals_of(given):
    """The holder whose number names ``given``'s signals (a Condition's notifies, a Queue's ``task_done``s): kept
    apart from the object's own number (a Queue's ``put`` is a give of another kind)."""
    holder = given.__dict__.get("_barrierlab_signals")
    if holder is None:
        holder = given._barrierlab_signals = types.SimpleNamespace()
    return holder


def _learners_caller(depth: int = 2) -> bool:
    """The wrapped call was made by the learner's own code (:func:`is_learners`): not the standard library's,
    torch's, barrierlab's or an installed package's (``filelock`` notifies a Condition of its own on every
    attempt to take its lock: recorded, those signals came between its opens and its lock)."""
    return is_learners(_caller_file(depth))


def _wrap_signal_give(original):
    """``threading.Condition.notify``/``notify_all`` and ``queue.Queue.task_done``: an event "signal" (kind "sync")
    in the giving thread's lane naming the object's signals, before the call. Unlike a "resolve" (of which only
    the first orders a take), every signal recorded before a take that the object's waiter returned from is
    ordered before it: a notify is made holding the condition's lock that the waiter then takes, and
    ``Queue.join`` returns once every ``task_done`` was called (attack20 a07)."""

    @functools.wraps(original)
    def give(self, *args, **kwargs):
        recorder = _recorder
        if recorder is not None and not recorder.depth and recorder.fd >= 0 and _learners_caller():
            try:
                _record_resolve(recorder, _signals_of(self), "signal")
            except Exception:  # noqa: BLE001
                pass
        return original(self, *args, **kwargs)

    give.__barrierlab_original__ = original
    return give


def _wrap_signal_take(original):
    """``threading.Condition.wait``/``wait_for`` that returned true, ``queue.Queue.join``: an event "result" (kind
    "sync") naming the object's signals, each time (a later wait orders later signals), once any was given."""

    @functools.wraps(original)
    def take(self, *args, **kwargs):
        got = original(self, *args, **kwargs)
        recorder = _recorder
        if (got or got is None) and recorder is not None and not recorder.depth and _learners_caller():
            try:
                if recorder.fd >= 0:
                    _record_taken(recorder, _signals_of(self), 3, once=False)
            except Exception:  # noqa: BLE001
                pass
        return got

    take.__barrierlab_original__ = original
    return take


def _took(future) -> None:
    """A ``concurrent.futures`` future a wait returned done: its outcome taken, as by its ``result()``."""
    recorder = _recorder
    if recorder is not None and not recorder.depth and recorder.fd >= 0:
        try:
            _record_result(recorder, future)
        except Exception:  # noqa: BLE001 - recording never changes what the learner's call does
            pass


def _wrap_futures_wait(original):
    """``concurrent.futures.wait``: each future it returned as done had its outcome taken (as its ``result()``)."""

    @functools.wraps(original)
    def wait(*args, **kwargs):
        got = original(*args, **kwargs)
        try:
            for future in got.done:
                _took(future)
        except Exception:  # noqa: BLE001 - not what concurrent.futures returns: nothing to record
            pass
        return got

    wait.__barrierlab_original__ = original
    return wait


def _wrap_as_completed(original):
    """``concurrent.futures.as_completed``: each future it yields is done, its outcome taken as it is yielded."""

    @functools.wraps(original)
    def as_completed(*args, **kwargs):
        for future in original(*args, **kwargs):
            _took(future)
            yield future

    as_completed.__barrierlab_original__ = original
    return as_completed


def _wrap_pool_apply_async(original):
    """``multiprocessing.pool.ThreadPool.apply_async`` (and ``apply``, which calls it): the task, run in a pool
    thread, ends with a "resolve" naming a number the returned ``AsyncResult`` keeps, so its ``get()`` orders the
    task's events before it (attack20 a07). A process ``Pool``'s tasks are left as they are (they are pickled)."""
    from multiprocessing.pool import ThreadPool

    @functools.wraps(original)
    def apply_async(self, func, *args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth or recorder.fd < 0 or not isinstance(self, ThreadPool):
            return original(self, func, *args, **kwargs)
        number = next(_future_numbers)

        def task(*task_args, **task_kwargs):
            try:
                return func(*task_args, **task_kwargs)
            finally:
                now = _recorder
                if now is not None and not now.depth and now.fd >= 0:
                    now.instant("sync", "resolve", None, f',"future":{number}')

        result = original(self, task, *args, **kwargs)
        result._barrierlab_future = number
        return result

    apply_async.__barrierlab_original__ = original
    return apply_async


def _wrap_async_result_get(original):
    """``AsyncResult.get`` of a task :func:`_wrap_pool_apply_async` numbered: its outcome taken once it is ready."""

    @functools.wraps(original)
    def get(self, *args, **kwargs):
        try:
            return original(self, *args, **kwargs)
        finally:
            recorder = _recorder
            if recorder is not None and not recorder.depth and recorder.fd >= 0:
                try:
                    if self.ready():
                        _record_taken(recorder, self, 3)
                except Exception:  # noqa: BLE001
                    pass

    get.__barrierlab_original__ = original
    return get


def _before_fork() -> None:
    """Before ``os.fork`` (``multiprocessing``'s fork start method, a ``DataLoader``'s workers): an event "fork"
    (kind "sync") in the forking thread's lane, then the pending lines are written. The child's first event
    ("forked") names it: the child's events are ordered after the fork and with nothing the parent does later
    (attack11 a16: a worker started before the barrier read what another rank wrote before it)."""
    recorder = _recorder
    if recorder is not None and recorder.fd >= 0:
        try:
            recorder.fork_event = recorder.instant("sync", "fork", _caller_site(2))
        except Exception:  # noqa: BLE001
            recorder.fork_event = None
    _write_pending()


def _wrap_waitpid(original):
    """``os.waitpid`` (``Process.join``, ``Popen.wait``): when it reaps a child forked from this process, an
    event "join" (kind "sync") naming the child's lane ("process PID"): the child's events are ordered before
    it."""

    @functools.wraps(original)
    def waitpid(*args, **kwargs):
        result = original(*args, **kwargs)
        recorder = _recorder
        if recorder is not None and not recorder.depth and recorder.fd >= 0:
            try:
                pid, status = result
                if pid > 0 and (os.WIFEXITED(status) or os.WIFSIGNALED(status)):
                    label = f"process {pid}"
                    recorder.depth += 1
                    try:
                        recorder.instant("sync", "join", _caller_site(), ',"child":' + _json_dumps(label))
                    finally:
                        recorder.depth -= 1
            except Exception:  # noqa: BLE001
                pass
        return result

    waitpid.__barrierlab_original__ = original
    return waitpid


def _lock_target(fd) -> tuple[int, str, str] | None:
    """(descriptor, JSON text of the file's path, "device:inode") of what ``fcntl.flock``/``lockf`` was given."""
    number = fd if isinstance(fd, int) else fd.fileno()
    info = os.fstat(number)
    try:
        path = os.readlink(f"/proc/self/fd/{number}")
    except OSError:
        path = "?"
    return number, _json_dumps(_clip_text(path)), f"{info.st_dev}:{info.st_ino}"


def _wrap_file_lock(name: str, original):
    """``fcntl.flock``/``fcntl.lockf`` (what ``filelock.FileLock`` uses on Linux): a lock taken is an event
    "lock" (kind "sync", after it was granted; ``value`` "exclusive" or "shared") and a release an event
    "unlock" (entered before the call); both name the descriptor (``fd``) and the file (``inode``: device and
    inode, ``path``). Attempts refused (``LOCK_NB`` while another process holds it) record nothing. A ``lockf``
    of a byte range takes no lock for the model (only its releases are recorded). The ordering model orders one
    rank's hold before another rank's later hold of the same file (attack11 a25: the datasets/transformers
    cache idiom)."""
    import fcntl

    @functools.wraps(original)
    def locked(fd, operation, *args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth or recorder.fd < 0 or type(operation) is not int:
            return original(fd, operation, *args, **kwargs)
        event_id = None
        if operation & fcntl.LOCK_UN:
            try:
                number, path, inode = _lock_target(fd)
                recorder.depth += 1
                try:
                    recorder.unheld(number)
                    extra = f',"path":{path},"inode":"{inode}","fd":{number},"call":"fcntl.{name}"'
                    event_id = recorder.enter("sync", "unlock", False, _caller_site(), extra, flush=False)
                finally:
                    recorder.depth -= 1
            except Exception:  # noqa: BLE001
                event_id = None
            try:
                result = original(fd, operation, *args, **kwargs)
            except BaseException as error:
                if event_id is not None:
                    with contextlib.suppress(Exception):
                        recorder.leave(event_id, error)
                raise
            if event_id is not None:
                with contextlib.suppress(Exception):
                    recorder.leave(event_id)
            return result
        result = original(fd, operation, *args, **kwargs)
        whole = not any(args) and not any(kwargs.values())  # lockf(fd, cmd, len=0, start=0, whence=0)
        if operation & (fcntl.LOCK_EX | fcntl.LOCK_SH) and whole:
            try:
                number, path, inode = _lock_target(fd)
                how = "exclusive" if operation & fcntl.LOCK_EX else "shared"
                extra = f',"path":{path},"inode":"{inode}","fd":{number},"value":"{how}","call":"fcntl.{name}"'
                recorder.depth += 1
                try:
                    recorder.instant("sync", "lock", _caller_site(), extra)
                    recorder.held(number, inode, f',"path":{path},"inode":"{inode}","fd":{number},"call":"close"')
                finally:
                    recorder.depth -= 1
            except Exception:  # noqa: BLE001
                pass
        return result

    locked.__barrierlab_original__ = original
    return locked


def _fspath_text(path) -> str:
    path = os.fspath(path)
    return path.decode(errors="replace") if isinstance(path, bytes) else path


#: Audit events after which the rank may stop running Python for a while, or at all: pending lines go first.
#: (``time.sleep`` where Python audits it: 3.11 does not, and there the helper thread writes them within WRITE_EVERY.)
_WRITE_BEFORE = frozenset({"time.sleep", "os.kill", "os.killpg", "signal.pthread_kill", "os.exec"})
_AUDITED = (
    frozenset(
        {"open", "os.rename", "os.remove", "os.rmdir", "os.truncate", "os.mkdir", "os.listdir", "os.scandir"}
        | {"os.symlink", "os.link", "mmap.__new__"}
    )
    | _WRITE_BEFORE
)
_audit_installed = False
#: Code of Python's import system (frozen in 3.11): a module imported while the rank records re-lists a folder
#: of ``sys.path`` whose contents changed since the warm process cached it, and opens the module's files.
_IMPORT_SYSTEM = ("<frozen importlib", "<frozen zipimport")
#: Called with the audit event's arguments (path, args, env) just before the process execs, whether or not it
#: records (a rank sets it: ``_rank._say_before_exec``); it must not raise.
before_exec = None


def _wrap_file_call(name: str, original, writes: bool, path_index: int, path_keyword: str):
    """``torch.save``/``torch.load`` and DCP's ``save``/``load`` open their files in C++ (no audit event):
    recorded at the Python call as one write or read of the path (DCP: the checkpoint folder), with the
    call's duration. DCP's calls are collectives of the whole group: the collectives and file writes they make
    inside are recorded too (torch.save/torch.load make none worth recording)."""
    hides_inside = not name.startswith("dcp.")

    @functools.wraps(original)
    def recorded_io(*args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth:
            return original(*args, **kwargs)
        target = args[path_index] if len(args) > path_index else kwargs.get(path_keyword)
        path = _learner_path(target) if isinstance(target, (str, bytes, os.PathLike)) else None
        if path is None:
            return original(*args, **kwargs)
        recorder.depth += hides_inside
        # torch.load(mmap=True) reads the tensors through a mapping of the file whenever they are used, after it
        # returned: the ordering model keeps the read open (attack18 a05)
        mapped = ',"value":"mmap"' if not writes and kwargs.get("mmap") is True else ""
        event_id = recorder.enter(
            "file",
            "write" if writes else "read",
            False,
            call_site(callers=False),
            f',"path":{_json_dumps(path)},"call":"{name}"{mapped}',
        )
        try:
            result = original(*args, **kwargs)
        except BaseException as error:
            recorder.leave(event_id, error)
            raise
        finally:
            recorder.depth -= hides_inside
        recorder.leave(event_id)
        return result

    recorded_io.__barrierlab_original__ = original
    return recorded_io


# --- torch's flight recorder: the collectives torch issued, including those from C++ -------------------

#: (path fragment of a torch frame, function name or "", phrase) — the first that matches a flight-recorder
#: entry's torch frames (innermost first) names who issued the collective. ``{op}`` is the op's name.
ISSUERS = (
    (
        "nn/parallel/distributed.py",
        "_verify_param_shape_across_processes",
        "DDP's construction-time check of parameter shapes ({op})",
    ),
    (
        "distributed/utils.py",
        "_verify_param_shape_across_processes",
        "DDP's construction-time check of parameter shapes ({op})",
    ),
    ("distributed/utils.py", "_sync_params_and_buffers", "DDP's construction-time broadcast of parameters and buffers"),
    ("distributed/algorithms/join.py", "", "Join's {op} (shadowing the ranks that still have inputs)"),
    (
        "nn/parallel/distributed.py",
        "_check_global_requires_backward_grad_sync",
        "DDP's Join-mode {op} of the sync flag",
    ),
    ("nn/parallel/distributed.py", "_sync_buffers", "DDP's forward broadcast of buffers"),
    ("nn/parallel/distributed.py", "_sync_module_buffers", "DDP's forward broadcast of buffers"),
    ("nn/parallel/distributed.py", "_match_all_reduce_for_bwd_pass", "DDP Join's shadow gradient {op}"),
    ("nn/parallel/distributed.py", "_match_unused_params_allreduce", "DDP Join's shadow {op} of unused parameters"),
    # With no _sync_buffers frame above (earlier rows), a collective from _pre_forward comes from C++:
    # reducer._rebuild_buckets() -> Reducer::sync_bucket_indices broadcasts rank 0's rebuilt bucket order
    # (torch/csrc/distributed/c10d/reducer.hpp), once, in the first forward after a backward.
    (
        "nn/parallel/distributed.py",
        "_pre_forward",
        "DDP forward's {op} of rank 0's rebuilt gradient buckets (once, before the module runs)",
    ),
    ("nn/parallel/distributed.py", "_post_forward", "DDP forward's {op} (after the module ran)"),
    ("nn/parallel/distributed.py", "", "DDP's {op}"),
    ("distributed/fsdp/", "", "FSDP's {op}"),
    ("distributed/_composable/", "", "FSDP's {op}"),
    ("distributed/tensor/", "", "DTensor's {op}"),
    ("distributed/_functional_collectives.py", "", "a functional {op} (DTensor / torch.compile)"),
    *(
        (path.removeprefix("torch/"), function, f"DCP's {{op}} (inside dcp.{name})")
        for (path, function), name in ops.CHECKPOINT_ENTRIES.items()
    ),
    ("distributed/checkpoint/", "", "DCP's {op} (checkpoint save/load)"),
    ("distributed/distributed_c10d.py", "", "torch.distributed's {op} (inside {func})"),
)


def issuer(
    op: str, torch_frames: list[tuple[str, int, str]], in_backward: bool, library: tuple[str, int, str] | None = None
) -> str:
    """Who issued a collective that did not come from the learner's own ``torch.distributed`` call.
    ``library`` is the frame of the installed package (not torch) the learner's code called, if one led to it."""
    for fragment, name, phrase in ISSUERS:  # the most specific pattern first, wherever its frame is
        for file, _line, func in torch_frames:
            if fragment in file and (not name or name == func):
                return phrase.format(op=op, func=func)
    if in_backward:
        return "DDP backward's gradient all_reduce" if op == "all_reduce" else f"autograd backward's {op}"
    if library is not None:
        return library_issuer(op, library)
    if torch_frames:
        file, _line, func = torch_frames[-1]
        return f"torch's {op} (inside {func})"
    return f"torch's {op} (issued from C++)"


def library_issuer(op: str, frame: tuple[str, int, str]) -> str:
    """ "torchmetrics' all_gather (inside gather_all_tensors)": a collective an installed package made."""
    package = installed_package(frame[0]) or "a library"
    return f"{package}{chr(39) if package.endswith('s') else chr(39) + 's'} {op} (inside {frame[2]})"


class _LazyModulesButInductor(set):
    """torch's set of lazily imported submodules (``torch._lazy_modules``, read by ``torch.__getattr__``), except
    that ``_inductor`` is not in it for the one thread that is copying the flight recorder."""

    def __init__(self, names, thread: int) -> None:
        super().__init__(names)
        self.thread = thread

    def __contains__(self, name) -> bool:
        if name == "_inductor" and threading.get_ident() == self.thread:
            return False
        return super().__contains__(name)


_dump_lock = threading.Lock()


@contextlib.contextmanager
def _symbolizing_without_inductor() -> Iterator[bool]:
    """Keep torch's stack-trace symbolizer from importing ``torch._inductor`` (and with it ``torch._dynamo``).

    To place the Python frames of code inductor generated, torch's symbolizer (``appendSymbolized`` in
    torch/csrc/profiler/python/combined_traceback.cpp) asks ``hasattr(torch, "_inductor")``, and torch's
    module ``__getattr__`` answers that by importing it: 3 s of CPU in a rank forked before the warm process
    preloaded it (the first run), 12 s on a loaded machine. While ``torch._inductor`` is not imported no
    frame can come from its generated code, so for this thread only, during the dump, the attribute is
    simply absent; every other thread sees torch unchanged. Yields False when that cannot be arranged (a
    torch without ``_lazy_modules``) and a dump would import it."""
    lazy = getattr(torch, "_lazy_modules", None)
    if "torch._inductor" in sys.modules or (lazy is not None and "_inductor" not in lazy):
        yield True
        return
    if not isinstance(lazy, set):  # a torch that looks up its lazy modules some other way
        yield False
        return
    with _dump_lock:
        torch._lazy_modules = _LazyModulesButInductor(lazy, threading.get_ident())
        try:
            yield True
        finally:
            torch._lazy_modules = lazy


def _flight_entries() -> dict | None:
    """torch's flight-recorder entries, compacted (a private API: None when it is not there)."""
    try:
        from torch._C._distributed_c10d import _dump_fr_trace

        with _symbolizing_without_inductor() as safe:
            if not safe:
                return None
            dump = pickle.loads(_dump_fr_trace(includeCollectives=True, includeStackTraces=True))
    except Exception:  # noqa: BLE001 - no flight recorder in this build or state
        return None
    return compact_flight(dump)


#: The names of the recorder's wrappers of the learner's collective calls (:func:`_wrap`, :func:`_wrap_group_method`).
_CALL_WRAPPERS = frozenset({"recorded", "recorded_method"})


def compact_flight(dump: dict) -> dict:
    """The line the events file keeps of torch's flight-recorder dump (``_dump_fr_trace``'s dict): per entry
    its op, group, sequence number, creation time, sizes, whether barrierlab's recorder made the call, who
    issued it otherwise (:func:`issuer`), and the learner's frames."""
    groups = {}
    for name, config in (dump.get("pg_config") or {}).items():
        try:
            groups[name] = json.loads(config.get("ranks", "[]")) if isinstance(config, dict) else []
        except ValueError:
            groups[name] = []
    entries = []
    for e in dump.get("entries", []):
        frames = [
            (_clip_text(str(f.get("filename", "?"))), f.get("line", 0), _clip_text(str(f.get("name", "?"))))
            for f in e.get("frames") or ()
        ]
        # "recorded" is the wrapper of a dist.* call, "recorded_method" of a ProcessGroup method's; torch.save's
        # and DCP's wrappers have names of their own
        covered = any(f[0] == _THIS_FILE and f[2] in _CALL_WRAPPERS for f in frames)
        torch_frames, user, outside = [], [], []  # outside: torch's frames that called the recorded dist.* call
        library = None  # the frame of the installed package the learner's code called into, if one led to it
        for frame in frames:
            if frame[0] == _THIS_FILE and frame[2] in _CALL_WRAPPERS:
                outside = []
                torch_frames = outside  # from here on, the torch frames are the callers of the dist.* function
                library = None
            elif frame[0].startswith(_TORCH_PREFIX):
                if not user:
                    torch_frames.append(frame)
            elif is_learners(frame[0]):
                user.append(list(frame))
            elif frame[0] in _LAUNCHER:
                break  # barrierlab's launcher: the learner's frames are all inside it
            elif not user and installed_package(frame[0]):
                library = frame  # the outermost one before the learner's frames: the package the learner called
        op = str(e.get("profiling_name", "?")).split(":")[-1]
        kept, left_out = keep_chain(user)
        in_backward = any(f[2] == "_engine_run_backward" for f in torch_frames)
        pg = e.get("process_group") or ("", "")
        entries.append(
            {
                "rid": e.get("record_id"),
                "pg": str(pg[0]),
                "seq": e.get("p2p_seq_id") if e.get("is_p2p") else e.get("collective_seq_id"),
                "p2p": bool(e.get("is_p2p")),
                "op": op,
                "ns": e.get("time_created_ns"),
                "sizes": e.get("input_sizes"),
                "dtypes": e.get("input_dtypes"),
                "out": e.get("output_sizes"),
                "state": e.get("state"),
                "mine": covered,
                # a dist.* call made by torch's own Python code (Join, DCP, DTensor) is torch's, not the learner's
                "issuer": (
                    issuer(op, outside, in_backward, library)
                    if outside
                    else (library_issuer(op, library) if library else None)
                )
                if covered
                else issuer(op, torch_frames, in_backward, library),
                "frames": kept,
                "left_out": left_out,
            }
        )
    return {"flight": entries, "groups": groups}


def dump_flight(recorder: _Recorder | None = None) -> bool:
    """Append torch's flight-recorder entries to the rank's events file (one line). True if written."""
    recorder = recorder or _recorder
    if recorder is None:
        return False
    data = _flight_entries()
    if data is None:
        return False
    try:
        write_flight(recorder, data)
    except (OSError, TypeError, ValueError):
        return False
    return True


def write_flight(recorder: _Recorder, data: dict) -> None:
    """Write a compacted flight record (:func:`compact_flight`) as lines of at most half the reader's
    ``events.MAX_LINE_BYTES`` each: torch keeps 2,000 entries, about 400 kB of JSON, which as one line the
    reader would drop whole. The reader merges the lines (entries are keyed by group and record id); an entry
    too large for a line by itself (the sizes of a thousand-tensor all_gather) loses its sizes."""
    limit = events.MAX_LINE_BYTES // 2
    at = time.monotonic()  # "at", not "t": readers take a line with "t" for an event entry
    chunk, size, first = [], 0, True
    for entry in data["flight"]:
        length = len(_json_dumps(entry, separators=(",", ":")))
        if length > limit // 4:
            entry = {**entry, "sizes": None, "dtypes": None, "out": None}
            length = len(_json_dumps(entry, separators=(",", ":")))
        if chunk and size + length > limit:
            recorder.write({"flight": chunk, "groups": data["groups"] if first else {}, "at": at})
            chunk, size, first = [], 0, False
        chunk.append(entry)
        size += length + 1
    recorder.write({"flight": chunk, "groups": data["groups"] if first else {}, "at": at})


class _StallWatch(threading.Thread):
    """Writes the lines the main thread left pending for :data:`WRITE_EVERY` seconds, and copies the flight
    recorder once whenever the main thread has stayed on one instruction for :data:`STALL_DUMP` seconds
    (blocked in a collective, or sleeping): a rank killed at the deadline never reaches :func:`stop`. It
    only reads ``sys._current_frames()``; torch is not touched."""

    def __init__(self, recorder: _Recorder | None, main: int, poll: float = WRITE_EVERY) -> None:
        super().__init__(daemon=True, name="barrierlab-flight")
        self.recorder, self.main, self.poll = recorder, main, poll
        self.halt = threading.Event()

    def attach(self, recorder: _Recorder) -> None:
        """Watch ``recorder`` (a watch started without one, by :func:`start_watch`). The thread is not woken: it
        finds the recorder at its next poll. Waking it (an event's ``set``) handed it the GIL on the launch's
        path, 3-12 ms of a pool rank's start on a busy 2-core machine (cProfile)."""
        self.recorder = recorder

    def run(self) -> None:
        while self.recorder is None:  # idle, in a rank forked ahead of its run
            if self.halt.wait(self.poll):
                return
        last, since, dumped = None, time.monotonic(), None
        while not self.halt.wait(self.poll):
            if self.recorder.pending and time.monotonic() - self.recorder.written_at >= WRITE_EVERY:
                self.recorder.flush()  # lines the main thread left behind before it went quiet
            # the frame object is let go at once: one held when its call returns keeps that call's locals alive
            # (CPython hands them to it), and a file the call opened stays open, unflushed, until it is let go
            # (`open(p, "w").write(...)` read back empty 1 run in 2 on 2 ranks while this held it for a poll)
            frame = sys._current_frames().get(self.main)
            key = None if frame is None else (id(frame), frame.f_lasti)
            frame = None
            now = time.monotonic()
            if key != last:
                last, since = key, now
            elif key is not None and key != dumped and now - since >= STALL_DUMP:
                if self.halt.is_set() or not dump_flight(self.recorder):
                    continue
                dumped = key


def _replace(owner, name: str, make) -> None:
    """Put ``make(original)`` in the place of ``owner.name``, remembering the original for :func:`_unpatch`. In a
    module (``os.stat``, ``torch.save``, ``open``), the wrapper stands in as a :class:`_StandIn`."""
    original = getattr(owner, name)
    # a class's own attribute is restored as it was: a pybind method is an ``instancemethod`` there, and what
    # getattr returns (the function inside) put back on the class would no longer bind ``self``
    # (``ProcessGroup.barrier`` after a run: "incompatible function arguments" in every later dist.barrier())
    raw = owner.__dict__.get(name, original) if isinstance(owner, type) else original
    _originals[(owner, name)] = raw
    # collectives (funcol's, torch._C's) stay plain functions: torch.compile traces them by what they are
    stand_in = isinstance(owner, type(os)) and owner is not torch._C and not owner.__name__.startswith(_FUNCOL)
    setattr(owner, name, _wrapper(owner, name, original, make, stand_in))


_FUNCOL = "torch.distributed._functional_collectives"


class _StandIn:
    """A recorder's wrapper in a module's place (``torch.save``, ``open``, ``os.stat``...), behaving as the
    original does where a plain Python function would not (attack18 a14, a18): it pickles as the original, by
    its module and name, so ``ProcessPoolExecutor().submit(torch.save, ...)`` works in a rank and the other
    process gets the original; kept as a class attribute it binds as a method only when the original would (a
    Python function does, a builtin such as ``open`` or ``os.stat`` does not: :class:`_BindingStandIn`)."""

    __slots__ = ("_call", "_module", "_name", "__dict__", "__weakref__")

    def __init__(self, call, original, module: str, name: str) -> None:
        functools.update_wrapper(self, call)
        self.__wrapped__ = getattr(call, "__wrapped__", original)
        self._call, self._module, self._name = call, module, name

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __reduce__(self):
        return getattr, (_ModuleByName(self._module), self._name)

    def __repr__(self) -> str:
        return repr(self.__wrapped__)


_STAND_IN_CALL = _StandIn.__call__.__code__


class _BindingStandIn(_StandIn):
    __slots__ = ()

    def __get__(self, obj, owner=None):
        return self if obj is None else functools.partial(self, obj)


class _ModuleByName:
    """Pickles as ``importlib.import_module(name)``: the module, found by name where it is unpickled."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self):
        import importlib

        return importlib.import_module, (self.name,)


#: (owner, name) -> (original, its wrapper): each wrapper is made once per original, so that a rank the warm
#: process forks ahead of time makes them while it waits for its run (:func:`prepare_wrappers`), not at the
#: launch (about 1 ms of CPU per rank).
_WRAPPERS: dict = {}


def _wrapper(owner, name: str, original, make, stand_in: bool = False):
    made = _WRAPPERS.get((owner, name))
    if made is None or made[0] is not original:
        wrapper = make(original)
        if stand_in:
            kind = _BindingStandIn if hasattr(type(original), "__get__") else _StandIn
            wrapper = kind(wrapper, original, owner.__name__, name)
        made = _WRAPPERS[(owner, name)] = (original, wrapper)
    return made[1]


def prepare_wrappers() -> None:
    """Make the wrappers :func:`start` puts in place (and install the audit hook, inert until it records)."""
    if _recorder is None and not _armed:
        _patch()
        _unpatch()


#: The wrappers are in place, inert, with nothing recording (:func:`arm`); :func:`start` finds them there.
_armed = False


def arm() -> None:
    """Put the wrappers in place ahead of a run, inert until :func:`start` gives them a recorder: a rank the warm
    process forks ahead of time calls this while it waits for its run, so the launch does not pay for putting
    them there (0.5 ms of a rank's CPU, most of it copying the pages the warm process shared with it). A rank
    whose run records nothing calls :func:`disarm` before any of the learner's code runs."""
    global _armed
    if _recorder is None and not _armed:
        _patch()
        _armed = True


def disarm() -> None:
    """Take away the wrappers :func:`arm` put in place (a run that records nothing sees torch's own functions)."""
    global _armed
    if _armed and _recorder is None:
        _unpatch()
    _armed = False


def _exit_after_writing(original):
    """``os._exit`` that first writes the pending lines (it ends the process without any clean-up)."""

    @functools.wraps(original)
    def _exit(*args, **kwargs):
        _write_pending()
        return original(*args, **kwargs)

    _exit.__barrierlab_original__ = original
    return _exit


def _write_pending() -> None:
    recorder = _recorder
    if recorder is not None:
        try:
            recorder.flush()
        except Exception:  # noqa: BLE001 - the rank's own exit or fork goes on
            pass


def _forked() -> None:
    global _future_numbers
    _looked.clear()  # keyed by thread: the forking thread's looks were the parent's
    _future_numbers = itertools.count((os.getpid() << 24) + 1)  # the child's futures never share the parent's
    if _recorder is not None:
        try:
            _recorder.forked()
        except Exception:  # noqa: BLE001 - the child runs on, its events without their fork
            pass


#: torch's functional collectives (``torch.distributed._functional_collectives``, "funcol": DTensor's, and the
#: learner's own) -> the op each is recorded as. Each returns at once with an ``AsyncCollectiveTensor`` whose
#: ``wait_tensor`` (called explicitly, or by torch at the tensor's first use) waits for the collective: recorded
#: as an async call and its wait, the ordering model orders them as ``async_op=True`` and ``Work.wait()`` (attack16
#: a01: a funcol all_reduce then ``wait_tensor`` was a false race; a04: nb04's check refused such an answer).
FUNCTIONAL = {
    "all_reduce": "all_reduce",
    "all_reduce_coalesced": "all_reduce_coalesced",
    "all_gather_single": "all_gather_into_tensor",
    "all_gather_tensor": "all_gather_into_tensor",
    "reduce_scatter_single": "reduce_scatter_tensor",
    "reduce_scatter_tensor": "reduce_scatter_tensor",
    "all_to_all_single": "all_to_all_single",
    "broadcast": "broadcast",
}
#: The storage of the tensor a recorded functional collective returned (inside its AsyncCollectiveTensor) ->
#: the call's event id: the ``wait_tensor`` of that tensor, or of a view of it (``result[0]``, attack17 a06), is
#: recorded as that call's wait.
_functional_outputs: dict[tuple, int] = {}
_FUNCTIONAL_KEPT = 4096


def _storage_key(tensor) -> tuple | None:
    """What identifies a tensor's memory, shared by its views: (device, its storage's address)."""
    try:
        return (str(tensor.device), tensor.untyped_storage().data_ptr())
    except Exception:  # noqa: BLE001 - a tensor without storage (a meta or fake tensor): not followed
        return None


def _wrap_functional(name: str, original):
    op = FUNCTIONAL[name]
    try:
        group_at = list(inspect.signature(original).parameters).index("group")
    except (TypeError, ValueError):
        group_at = None

    @functools.wraps(original)
    def recorded(*args, **kwargs):
        recorder = _recorder
        funcol = sys.modules.get("torch.distributed._functional_collectives")
        if recorder is None or recorder.depth or funcol is None or group_at is None or funcol._are_we_tracing():
            return original(*args, **kwargs)
        group = kwargs["group"] if "group" in kwargs else args[group_at] if group_at < len(args) else None
        try:
            process_group = c10d._resolve_process_group(funcol._resolve_group_name(group, kwargs.get("tag", "")))
        except Exception:  # noqa: BLE001 - a group torch cannot resolve: torch says so
            return original(*args, **kwargs)
        if process_group is c10d._get_default_group():
            process_group = None
        extra = _shapes(args[:1], {}) + _group_text(process_group) + ',"async":true'
        if op == "broadcast":  # its root: a rank of the default group (a subgroup's is left out: not known here)
            src = kwargs["src"] if "src" in kwargs else args[1] if len(args) > 1 else None
            if process_group is not None or type(src) is not int:
                return original(*args, **kwargs)
            extra += f',"src":{src}'
        event_id, result = _run_recorded(
            recorder, "collective", op, True, call_site(), extra, original, *args, **kwargs
        )
        outputs = result if isinstance(result, (list, tuple)) else [result]
        waiting = [t.elem for t in outputs if isinstance(getattr(t, "elem", None), torch.Tensor)]
        if not waiting:  # torch waited inside (a gather along another dimension): complete when it returned
            _run_recorded(recorder, "wait", "wait_tensor", False, None, f',"of":{event_id}', lambda: None)
            return result
        if len(_functional_outputs) >= _FUNCTIONAL_KEPT:
            _functional_outputs.clear()
        for elem in waiting:
            key = _storage_key(elem)
            if key is not None:
                _functional_outputs[key] = event_id
        return result

    recorded.__barrierlab_original__ = original
    return recorded


def _wrap_wait_tensor(original):
    """funcol's ``wait_tensor``, recording the wait of a recorded functional collective's result."""

    @functools.wraps(original)
    def wait(tensor, *args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth:
            return original(tensor, *args, **kwargs)
        key = _storage_key(tensor)
        found = _functional_outputs.pop(key, None) if key is not None else None
        if found is None:
            return original(tensor, *args, **kwargs)
        return _recorded_wait(recorder, "wait_tensor", found, original, tensor, *args, **kwargs)

    wait.__barrierlab_original__ = original
    return wait


#: (how many modules were imported, {collective's name: torch's modules other than ``distributed_c10d`` and
#: ``torch.distributed`` that hold it by that name}), computed once per set of imported modules: a rank forked from
#: the warm process, which made its wrappers ahead of time, finds it ready (scanning every module for every name
#: at each rank's start cost 25 ms).
#: What :func:`_holders_of` found: the originals it looked for (their ids), each torch.distributed module it looked
#: in (name -> the module object's id and its count of names), and the holders found (name -> modules).
_holders: tuple[tuple[int, ...], dict[str, tuple[int, int]], dict[str, list]] = ((), {}, {})


def _holders_of(originals: dict[str, object]) -> dict[str, list]:
    """torch's own modules, already imported, that hold each of ``originals`` (name -> c10d's function) under its
    name (``device_mesh`` imports ``new_group`` from ``distributed_c10d`` by name: attack16 a02, a mesh built with
    other shapes on one rank made subgroups the record never saw). A module imported later takes the wrapper from
    ``distributed_c10d``. Only modules not looked in before are read: a rank's start looked in every
    torch.distributed module each time the count of imported modules had changed since the pool forked it
    (13 ms of a rank's CPU under cProfile; most of what recording added to a launch)."""
    global _holders
    key = tuple(map(id, originals.values()))
    if _holders[0] != key:
        _holders = (key, {}, {})
    _, seen, found = _holders
    for module_name, module in sys.modules.copy().items():
        if module is None or not module_name.startswith("torch.distributed."):
            continue
        names = vars(module) if hasattr(module, "__dict__") else {}
        # the module object and how many names it holds: a module looked in while it was being imported, or
        # imported again under its name, is looked in afresh
        state = (id(module), len(names))
        if seen.get(module_name) == state:
            continue
        if module_name in seen:
            for holders in found.values():
                holders[:] = [held for held in holders if getattr(held, "__name__", None) != module_name]
        seen[module_name] = state
        if module in (c10d, dist):
            continue
        for name, original in originals.items():
            held = names.get(name)
            # looked in while recording: the module holds the wrapper in the original's place
            if held is not None and (held is original or held is _WRAPPERS.get((c10d, name), (None, None))[1]):
                found.setdefault(name, []).append(module)
    return found


def _patch() -> None:
    global _audit_installed
    originals = {name: getattr(c10d, name) for name in (*COLLECTIVES, *POINT_TO_POINT) if hasattr(c10d, name)}
    holders = _holders_of(originals)
    for names, numbered in ((COLLECTIVES, True), (POINT_TO_POINT, False)):
        for name in names:
            original = originals.get(name)
            if original is None:
                continue
            wrapper = _wrapper(c10d, name, original, functools.partial(_wrap, name, numbered=numbered))
            for module in (c10d, dist, *holders.get(name, ())):
                if getattr(module, name, None) is original:
                    _originals[(module, name)] = original
                    setattr(module, name, wrapper)
    import torch.distributed._functional_collectives as funcol  # noqa: PLC0415 - preloaded by the warm process

    for name in FUNCTIONAL:
        if callable(getattr(funcol, name, None)):
            _replace(funcol, name, functools.partial(_wrap_functional, name))
    _replace(funcol, "wait_tensor", _wrap_wait_tensor)
    _replace(dist.Work, "wait", _wrap_work_wait)
    _replace(dist.Work, "get_future", _wrap_get_future)
    _replace(dist.Work, "is_completed", functools.partial(_wrap_completion_poll, "Work.is_completed", _async_calls))
    _replace(torch._C.Future, "wait", _wrap_future_wait)
    _replace(torch._C.Future, "then", _wrap_future_then)
    _replace(torch._C, "_collect_all", _wrap_collect_all)
    _replace(torch._C.Future, "done", functools.partial(_wrap_completion_poll, "Future.done", _async_futures))
    for name in GROUP_METHODS:
        if callable(getattr(dist.ProcessGroup, name, None)):
            _replace(dist.ProcessGroup, name, functools.partial(_wrap_group_method, name))
    for method in STORE_METHODS:
        if callable(getattr(dist.Store, method, None)):
            _replace(dist.Store, method, functools.partial(_wrap_store, method))
    _replace(dist.PrefixStore, "__init__", _wrap_prefix_store_init)
    # torch.save is torch.serialization.save (code that calls it so, or imported it from there, wrote unseen:
    # attack22 a05); torch.jit.save/load write and read in C++ and are recorded at their Python call
    for module, prefix in ((torch, "torch"), (torch.serialization, "torch"), (torch.jit, "torch.jit")):
        for name, writes, index in (("save", True, 1), ("load", False, 0)):
            make = functools.partial(
                _wrap_file_call, f"{prefix}.{name}", writes=writes, path_index=index, path_keyword="f"
            )
            _replace(module, name, make)
    dcp = sys.modules.get("torch.distributed.checkpoint")
    if dcp is not None:
        for name, writes in (("save", True), ("load", False), ("async_save", True)):
            if callable(getattr(dcp, name, None)):
                make = functools.partial(
                    _wrap_file_call, f"dcp.{name}", writes=writes, path_index=99, path_keyword="checkpoint_id"
                )
                _replace(dcp, name, make)
    _replace(os, "_exit", _exit_after_writing)
    _replace(os, "open", _wrap_os_open)
    _replace(builtins, "open", _wrap_open)
    _replace(io, "open", _wrap_open)  # pathlib and others call io.open (the same function as builtins.open)
    _replace(threading.Thread, "start", _wrap_thread_start)
    _replace(threading.Thread, "join", _wrap_thread_join)
    _replace(os, "waitpid", _wrap_waitpid)
    import concurrent.futures

    for name in ("set_result", "set_exception"):
        _replace(concurrent.futures.Future, name, _wrap_future_resolve)
    import queue

    _replace(threading.Event, "set", _wrap_handoff_give)
    _replace(queue.Queue, "put", _wrap_handoff_give)
    for owner, name in ((threading.Event, "wait"), (threading.Event, "is_set"), (queue.Queue, "get")):
        _replace(owner, name, _wrap_handoff_take)
    for name in ("result", "exception"):
        _replace(concurrent.futures.Future, name, _wrap_future_result)
    _replace(concurrent.futures, "wait", _wrap_futures_wait)
    _replace(concurrent.futures, "as_completed", _wrap_as_completed)
    for owner, name in (
        (threading.Condition, "notify"),
        (threading.Condition, "notify_all"),
        (queue.Queue, "task_done"),
    ):
        _replace(owner, name, _wrap_signal_give)
    for owner, name in ((threading.Condition, "wait"), (threading.Condition, "wait_for"), (queue.Queue, "join")):
        _replace(owner, name, _wrap_signal_take)
    import multiprocessing.pool

    _replace(multiprocessing.pool.Pool, "apply_async", _wrap_pool_apply_async)
    _replace(multiprocessing.pool.ApplyResult, "get", _wrap_async_result_get)
    import fcntl

    for name in ("flock", "lockf"):
        _replace(fcntl, name, functools.partial(_wrap_file_lock, name))
    for owner, name in (
        (os.path, "exists"),
        (os.path, "lexists"),
        (os.path, "isfile"),
        (os.path, "isdir"),
        (os, "access"),  # os.access(path, os.F_OK) polled for a marker (attack18 a17)
        (pathlib.Path, "exists"),
        (pathlib.Path, "is_file"),
        (pathlib.Path, "is_dir"),
    ):
        _replace(owner, name, _wrap_exists)
    for owner, name in ((os, "stat"), (os.path, "getsize"), (os.path, "getmtime"), (pathlib.Path, "stat")):
        _replace(owner, name, _wrap_stat_look)
    import glob

    _replace(os, "listdir", functools.partial(_wrap_listing, False))
    _replace(glob, "glob", functools.partial(_wrap_listing, True))
    if not _audit_installed:
        sys.addaudithook(_audit)  # for the life of the process: inert when nothing records
        os.register_at_fork(before=_before_fork, after_in_child=_forked)
        atexit.register(_write_pending)
        _audit_installed = True


def _unpatch() -> None:
    for (module, name), original in _originals.items():
        setattr(module, name, original)
    _originals.clear()


def start(path: str, rank: int, t0: float | None = None) -> None:
    """Record this process's collectives and spans to ``path`` (JSON lines) until :func:`stop`."""
    global _recorder, _watch, _own_folder, _main_thread, _idle_watch, _armed
    stop()
    _own_folder = os.path.dirname(os.path.abspath(path))
    _plain_paths.clear()
    _quoted_paths.clear()  # their answers depend on the folder of the record
    _looked.clear()
    _seen_complete.clear()
    _main_thread = threading.main_thread().ident
    _recorder = _Recorder(path, rank, time.monotonic() if t0 is None else t0)
    if _armed:  # the wrappers are in place already (a rank forked ahead of time): they record from now on
        _armed = False
    else:
        _patch()
    if _idle_watch is not None and _idle_watch.is_alive():
        _watch = _idle_watch
        _watch.attach(_recorder)
    else:
        _watch = _StallWatch(_recorder, threading.main_thread().ident)
        _watch.start()
    _idle_watch = None


#: The rank's start-up phases after the start line, as :func:`phase` writes them: its call loaded and now joining
#: the group (``bl.run``'s init), and its function called (the live view tells the three apart: attack26 a22
#: showed ranks waiting for a peer that never finished unpickling its arguments as "running your code").
PHASES = ("joining", "called")


def phase(name: str) -> None:
    """Write a start-up phase line (``{"meta": name, "t": ...}``, ``name`` one of :data:`PHASES`) at once."""
    if name not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, not {name!r}")
    recorder = _recorder
    if recorder is None:
        return
    recorder._emit(_json_dumps({"meta": name, "t": time.monotonic()}).encode() + b"\n", flush=True)


def start_watch() -> None:
    """Start the thread :func:`start` needs, idle until it is given the recorder: a rank the warm process forks
    ahead of time starts it while it waits for its run, since starting a thread waits until the thread has run
    (milliseconds on a busy machine, on the launch's path)."""
    global _idle_watch
    if _idle_watch is None:
        _idle_watch = _StallWatch(None, threading.main_thread().ident)
        _idle_watch.start()


def stop() -> None:
    """Stop recording, copy torch's flight recorder, restore the original ``torch.distributed`` functions."""
    global _recorder, _watch
    if _watch is not None:
        _watch.halt.set()
        _watch.join(timeout=5)
        _watch = None
    global lost_record
    if _recorder is not None:
        _unpatch()
        recorder, _recorder = _recorder, None
        dump_flight(recorder)
        recorder.close()
        lost_record = recorder.lost()


def start_from_env() -> bool:
    """Start recording into ``$BARRIERLAB_RECORD_DIR/rank$RANK.events`` if that variable is set."""
    folder = os.environ.get(RECORD_DIR_VARIABLE)
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
    # checked the same way recording or not, in a rank or not (attack14 a07)
    if not isinstance(kind, str) or kind not in SPAN_KINDS:
        raise ValueError(f"span kind must be one of {', '.join(SPAN_KINDS)}, not {kind!r}")
    str(name)  # a name with no text fails here whether or not anything records it
    recorder = _recorder
    if recorder is None:
        yield
        return
    event_id = recorder.enter(kind, name, False, call_site(callers=False), flush=False)
    try:
        yield
    except BaseException as error:
        recorder.leave(event_id, error)
        raise
    recorder.leave(event_id)
