"""Per-rank recording of collective calls and learner-defined spans.

Inside a rank started by :func:`barrierlab.run` recording is on by default.  Under ``torchrun`` or any
other launcher it is on when ``BARRIERLAB_RECORD_DIR`` names a folder (one ``rankN.events`` file per
rank; see :func:`start_from_env`), and off otherwise: then :func:`span` costs one global lookup and
the ``torch.distributed`` functions are untouched.

Each event is written as it happens, as one JSON line at entry and one at exit, and flushed, so a rank
that is killed or hangs still leaves the record of what it entered and never left.  Times are
``time.monotonic()`` seconds, one system-wide clock for every rank on a Linux machine.

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

import ast
import bisect
import contextlib
import functools
import json
import os
import pickle
import re
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from barrierlab import _files
from barrierlab.sites import MACHINERY, Site

#: Collectives every rank of the group must call (their calls are numbered per rank).
COLLECTIVES = (
    "barrier",
    "monitored_barrier",
    "all_reduce",
    "broadcast",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "reduce",
    "gather",
    "gather_object",
    "scatter",
    "scatter_object_list",
    "broadcast_object_list",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all",
    "all_to_all_single",
    "new_group",
)
#: Point-to-point calls: recorded, but not numbered with the collectives (peers differ by rank).
POINT_TO_POINT = ("send", "recv", "isend", "irecv", "batch_isend_irecv")

SPAN_KINDS = ("compute", "io", "wait", "other")

_TORCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(dist.__file__)))
_INTERNAL_FILES = MACHINERY | {contextlib.__file__}  # contextlib: the frames of span()'s decorator
#: Callers that are never the learner's: torch, the standard library (runpy under torchrun), frozen modules.
_NOT_LEARNERS = (_TORCH_DIR, sysconfig.get_paths()["stdlib"] + os.sep, "<frozen")
_THIS_FILE = os.path.abspath(__file__)
_LAUNCHER = {os.path.join(os.path.dirname(_THIS_FILE), name) for name in ("_rank.py", "_zygote.py")}
#: Seconds the rank's main thread must stay on one instruction before torch's flight recorder is copied.
STALL_DUMP = 1.0
#: How many of the learner's frames outside the innermost one are kept per collective (helper -> caller):
#: enough to reach the learner's own file through a framework's layers (Trainer.fit -> hook -> helper).
CALLERS_KEPT = 8
_Tensor = torch.Tensor


#: The recorder holds its events file at this descriptor number or above (close-on-exec), out of the way of
#: the descriptors a rank opens for itself, which the system numbers from the lowest free one.
HIGH_FD = 512
#: Longest text (span or op name, file, function) recorded, in characters: at most a few KiB per line in bytes
#: whatever the learner passes (three span names of 80 MB once pushed the kernel reading them by 1 GiB).
MAX_TEXT = 1000
#: Most distinct texts whose JSON form is cached (span names made with f-strings are all different).
_QUOTED_KEPT = 4096


def _clip_text(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _high_fd(fd: int) -> int:
    """``fd`` moved to a close-on-exec descriptor at :data:`HIGH_FD` or above (below the process's limit)."""
    import fcntl
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    floor = HIGH_FD if soft == resource.RLIM_INFINITY or soft > 2 * HIGH_FD else max(3, soft // 2)
    try:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor)
    except OSError:
        return fd
    os.close(fd)
    return high


class _Recorder:
    """Writes one JSON line per entry and per exit straight to the file descriptor (one ``write`` call,
    no Python buffer), so a line is in the kernel's page cache before the rank blocks in a collective.

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
        self.rank = rank
        self.seq = 0
        self.next_id = 0
        self.depth = 0
        self._quoted: dict[str, str] = {}
        self.write(
            {"meta": "start", "rank": rank, "t0": t0, "pid": os.getpid(), "wall": time.time() - (time.monotonic() - t0)}
        )

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

    def _emit(self, data: bytes) -> None:
        if self.fd < 0:
            return
        try:
            if not self._holds_its_file():
                self._reopen()
                if self.fd < 0:
                    return
            os.write(self.fd, data)
        except OSError:
            self.fd = -1  # recording stops; the learner's call goes on

    def write(self, event: dict) -> None:
        self._emit((json.dumps(event, separators=(",", ":")) + "\n").encode())

    def quote(self, text: str) -> str:
        """JSON string literal of ``text`` (at most :data:`MAX_TEXT` characters), cached: file names,
        functions and op names repeat."""
        quoted = self._quoted.get(text)
        if quoted is None:
            if len(self._quoted) >= _QUOTED_KEPT:
                self._quoted.clear()
            quoted = self._quoted[text] = json.dumps(_clip_text(str(text)))
        return quoted

    def enter(self, kind: str, name: str, numbered: bool, site: tuple | None, extra: str = "") -> int:
        self.next_id += 1
        line = f'{{"id":{self.next_id},"kind":"{kind}","name":{self.quote(name)},"t":{time.monotonic()!r}'
        if numbered:
            self.seq += 1
            line += f',"seq":{self.seq}'
        if site:
            line += f',"file":{self.quote(site[0])},"line":{site[1]},"func":{self.quote(site[2])}'
            if len(site) > 3 and site[3]:
                line += ',"callers":[' + ",".join(f"[{self.quote(f)},{n},{self.quote(c)}]" for f, n, c in site[3]) + "]"
        self._emit((line + extra + "}\n").encode())
        return self.next_id

    def leave(self, event_id: int, error: BaseException | None = None) -> None:
        if error is None:
            self._emit(f'{{"id":{event_id},"end":{time.monotonic()!r}}}\n'.encode())
        else:
            self.write({"id": event_id, "end": time.monotonic(), "error": _error_text(error)})

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
        """Close the events file if the descriptor still is it (else it is the rank's: left alone)."""
        ours = self.fd >= 0 and self._holds_its_file()
        fd, self.fd = self.fd, -1
        if ours:
            try:
                os.close(fd)
            except OSError:
                pass


def _error_text(error: BaseException) -> str:
    try:
        text = f"{type(error).__name__}: {error}"
    except Exception:  # noqa: BLE001 - an exception whose str() raises
        text = type(error).__name__
    return text[:2000]


_recorder: _Recorder | None = None
_watch: _StallWatch | None = None
_originals: dict[tuple[object, str], object] = {}


def call_site(callers: bool = True) -> tuple | None:
    """The innermost frame outside torch and barrierlab's machinery: the learner's line, then (for
    collectives) up to :data:`CALLERS_KEPT` learner frames further out (the lines that called into a helper)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_TORCH_DIR) and filename not in _INTERNAL_FILES:
            break
        frame = frame.f_back
    if frame is None:
        return None
    site = (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
    if not callers:
        return site
    callers = []
    outer = frame.f_back
    while outer is not None and len(callers) < CALLERS_KEPT:
        filename = outer.f_code.co_filename
        if filename in MACHINERY:
            break
        if not filename.startswith(_NOT_LEARNERS) and filename != contextlib.__file__:
            callers.append((filename, outer.f_lineno, outer.f_code.co_name))
        outer = outer.f_back
    return site + (callers,) if callers else site


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


def _wrap(name: str, original, numbered: bool):
    @functools.wraps(original)
    def recorded(*args, **kwargs):
        recorder = _recorder
        if recorder is None or recorder.depth:
            return original(*args, **kwargs)
        recorder.depth += 1
        extra = _shapes(args, kwargs)
        if kwargs.get("async_op"):
            extra += ',"async":true'
        event_id = recorder.enter("collective" if numbered else "p2p", name, numbered, call_site(), extra)
        try:
            result = original(*args, **kwargs)
        except BaseException as error:
            recorder.leave(event_id, error)
            raise
        finally:
            recorder.depth -= 1
        recorder.leave(event_id)
        if result is not None and hasattr(result, "get_future"):
            # The caller gets torch's own Work back (C++ code such as DDP's Join hook casts it); its
            # completion is observed through its future, never by wrapping it.
            try:
                result.get_future().add_done_callback(functools.partial(recorder.completed, event_id))
            except Exception:  # noqa: BLE001 - a Work without a future: completion stays unknown
                pass
        return result

    recorded.__barrierlab_original__ = original
    return recorded


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
    ("distributed/checkpoint/", "", "DCP's {op} (checkpoint save/load)"),
    ("distributed/distributed_c10d.py", "", "torch.distributed's {op} (inside {func})"),
)


def issuer(op: str, torch_frames: list[tuple[str, int, str]], in_backward: bool) -> str:
    """Who issued a collective that did not come from the learner's own ``torch.distributed`` call."""
    for fragment, name, phrase in ISSUERS:  # the most specific pattern first, wherever its frame is
        for file, _line, func in torch_frames:
            if fragment in file and (not name or name == func):
                return phrase.format(op=op, func=func)
    if in_backward:
        return "DDP backward's gradient all_reduce" if op == "all_reduce" else f"autograd backward's {op}"
    if torch_frames:
        file, _line, func = torch_frames[-1]
        return f"torch's {op} (inside {func})"
    return f"torch's {op} (issued from C++)"


def _flight_entries() -> dict | None:
    """torch's flight-recorder entries, compacted (a private API: None when it is not there).

    None too when ``torch._dynamo`` is not loaded: its stack traces would make torch import it (seconds on a
    cold rank, e.g. one forked before the warm process finished preloading, or under torchrun), and without
    it nothing issued collectives from C++ (DDP, FSDP and DTensor load it): the Python record is complete."""
    if "torch._dynamo" not in sys.modules:
        return None
    try:
        from torch._C._distributed_c10d import _dump_fr_trace

        dump = pickle.loads(_dump_fr_trace(includeCollectives=True, includeStackTraces=True))
    except Exception:  # noqa: BLE001 - no flight recorder in this build or state
        return None
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
        covered = any(f[0] == _THIS_FILE and f[2] == "recorded" for f in frames)
        torch_frames, user, outside = [], [], []  # outside: torch's frames that called the recorded dist.* call
        for frame in frames:
            if frame[0] == _THIS_FILE and frame[2] == "recorded":
                outside = []
                torch_frames = outside  # from here on, the torch frames are the callers of the dist.* function
            elif frame[0].startswith(_TORCH_DIR):
                if not user:
                    torch_frames.append(frame)
            elif frame[0] not in MACHINERY and frame[0] != contextlib.__file__:
                user.append(list(frame))
            elif frame[0] in _LAUNCHER:
                break  # barrierlab's launcher: the learner's frames are all inside it
        op = str(e.get("profiling_name", "?")).split(":")[-1]
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
                "issuer": (issuer(op, outside, in_backward) if outside else None)
                if covered
                else issuer(op, torch_frames, in_backward),
                "frames": user[: 1 + CALLERS_KEPT],
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
    data["at"] = time.monotonic()  # not "t": readers take a line with "t" for an event entry
    try:
        recorder.write(data)
    except (OSError, TypeError, ValueError):
        return False
    return True


class _StallWatch(threading.Thread):
    """Copies the flight recorder once whenever the main thread has stayed on one instruction for
    :data:`STALL_DUMP` seconds (blocked in a collective, or sleeping): a rank killed at the deadline
    never reaches :func:`stop`. It only reads ``sys._current_frames()``; torch is not touched."""

    def __init__(self, recorder: _Recorder, main: int, poll: float = 0.25) -> None:
        super().__init__(daemon=True, name="barrierlab-flight")
        self.recorder, self.main, self.poll = recorder, main, poll
        self.halt = threading.Event()

    def run(self) -> None:
        last, since, dumped = None, time.monotonic(), None
        while not self.halt.wait(self.poll):
            frame = sys._current_frames().get(self.main)
            key = None if frame is None else (id(frame), frame.f_lasti)
            now = time.monotonic()
            if key != last:
                last, since = key, now
            elif key is not None and key != dumped and now - since >= STALL_DUMP:
                if self.halt.is_set() or not dump_flight(self.recorder):
                    continue
                dumped = key


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
    global _recorder, _watch
    stop()
    _recorder = _Recorder(path, rank, time.monotonic() if t0 is None else t0)
    _patch()
    _watch = _StallWatch(_recorder, threading.main_thread().ident)
    _watch.start()


def stop() -> None:
    """Stop recording, copy torch's flight recorder, restore the original ``torch.distributed`` functions."""
    global _recorder, _watch
    if _watch is not None:
        _watch.halt.set()
        _watch.join(timeout=5)
        _watch = None
    if _recorder is not None:
        _unpatch()
        recorder, _recorder = _recorder, None
        dump_flight(recorder)
        recorder.close()


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
    event_id = recorder.enter(kind, name, False, call_site(callers=False))
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
    #: Shapes and dtypes of the tensors the call was given, recorded when it was made.
    sizes: list[list[int]] | None = field(default=None, repr=False)
    dtypes: list[str] | None = field(default=None, repr=False)
    #: ``async_op=True``: ``end`` is when the call returned, ``done`` when its work completed (None: never).
    is_async: bool = field(default=False, repr=False)
    done: float | None = field(default=None, repr=False)
    #: The learner's frames further out than ``file:line`` (file, line, func), innermost first: the lines
    #: that called into the helper that made the call.
    callers: list[tuple[str, int, str]] = field(default_factory=list, repr=False)

    @property
    def duration(self) -> float | None:
        return None if self.end is None else self.end - self.start

    @property
    def is_collective(self) -> bool:
        return self.kind == "collective"

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


@functools.lru_cache(maxsize=64)
def functions(path: str) -> tuple[tuple[str, int, int], ...]:
    try:
        with open(path) as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple(
        (node.name, node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    )


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


def read_meta(path: str) -> dict | None:
    """The first line of an events file: rank, pid, ``t0`` (monotonic) and ``wall`` (time.time() at t0)."""
    try:
        with _files.open_regular(path) as f:
            item = json.loads(_files.bounded_line(f) or b"null")
    except (FileNotFoundError, ValueError, RecursionError):
        return None
    return item if isinstance(item, dict) and item.get("meta") == "start" else None


#: Lines of an events file read at most: this many from its start and as many from its end (a rank that
#: loops over ``span`` for a whole deadline writes millions; the middle is counted, not parsed).
LINES_KEPT = 5_000
_MIDDLE_COUNTED = 64 * 1024 * 1024  # a middle up to this size is counted exactly; a larger one is estimated
_TAIL_BYTES = 64 * 1024 * 1024  # the end of a file read back at most (a file of one huge line has no lines to find)


@dataclass(frozen=True)
class Dropped:
    """Events of a rank's file that were not read (the middle of a very long file): how many, and whether
    that number is an estimate (from the middle's size and the kept lines' average size)."""

    events: int = 0
    estimated: bool = False

    def __bool__(self) -> bool:
        return self.events > 0

    def __str__(self) -> str:
        return f"{'about ' if self.estimated else ''}{self.events:,}"


_cache: tuple[tuple, list[dict], Dropped] | None = None


_END_LINE = re.compile(rb'\{"id":(\d+),"end":(-?[0-9.]+(?:e[-+]?\d+)?)\}')


def _parse(raw: bytes, items: list[dict]) -> None:
    for line in raw.split(b"\n"):
        if line and len(line) <= _files.MAX_LINE:
            end = _END_LINE.fullmatch(line)  # half the lines of a flood: parsed 10x faster than by json
            if end is not None:
                items.append({"id": int(end.group(1)), "end": float(end.group(2))})
                continue
            try:
                item = json.loads(line)
            except (ValueError, RecursionError):
                continue  # a line cut short by a kill
            if isinstance(item, dict):
                items.append(item)


def _lines_kept(path: str, keep: int | None = None) -> tuple[list[dict], Dropped]:
    """The parsed lines of an events file, at most ``keep`` (default :data:`LINES_KEPT`) from its start
    and as many from its end, read incrementally (memory bounded by what is kept), and what was dropped.
    The last file read is cached, whatever ``keep`` it was read with (``read_events_kept`` and then
    ``read_flight`` read the same file in turn)."""
    global _cache
    keep = LINES_KEPT if keep is None else keep
    try:
        f = _files.open_regular(path)
    except (FileNotFoundError, NotADirectoryError, _files.UnsafeEntry):
        return [], Dropped()  # no record, or none that can be read safely (report names such entries)
    with f:
        info = os.fstat(f.fileno())
        key = (path, info.st_ino, info.st_size, info.st_mtime_ns)
        if _cache is not None and _cache[0] == key:
            return _cache[1], _cache[2]
        size = info.st_size
        head = []
        count = 0
        while count < keep:
            line = _files.bounded_line(f)
            if line is None:
                continue  # longer than _files.MAX_LINE: not kept
            if not line:
                break
            head.append(line)
            count += 1
        head_end = f.tell()
        items: list[dict] = []
        _parse(b"".join(head), items)
        dropped = Dropped()
        if head_end < size:  # more than ``keep`` lines: find the last ``keep`` lines, reading backwards
            block = 1 << 20
            position, tail, lines = size, b"", 0
            while position > head_end and lines <= keep and len(tail) < _TAIL_BYTES:
                start = max(head_end, position - block)
                f.seek(start)
                tail = f.read(position - start) + tail
                position = start
                lines = tail.count(b"\n")
            pieces = tail.split(b"\n")
            if position > head_end:
                pieces = pieces[1:]  # the first piece is the end of a line of the middle
            tail = b"\n".join(pieces[-(keep + 1) :])  # the last piece is what follows the last newline
            middle_start = size - len(tail)
            middle = middle_start - head_end
            if middle > 0:
                if middle <= _MIDDLE_COUNTED:
                    f.seek(head_end)
                    events, left = 0, middle
                    while left > 0:
                        chunk = f.read(min(block, left))
                        if not chunk:
                            break
                        events += chunk.count(b'"kind":')
                        left -= len(chunk)
                    dropped = Dropped(events, False)
                else:
                    sample = b"".join(head) + tail
                    per_event = len(sample) / max(1, sample.count(b'"kind":'))
                    dropped = Dropped(int(middle / per_event), True)
            _parse(tail, items)
    _cache = (key, items, dropped)
    return items, dropped


def _lines(path: str) -> list[dict]:
    return _lines_kept(path)[0]


def _resolved(index, file: str, line: int, func: str) -> str:
    return index.resolve(file, line, func) if index is not None else file


def _placed(index, file: str, line: int, func: str, callers) -> str:
    """``file`` resolved by the index, else, if still ``<dynamic-code>``, by the files of its callers."""
    file = _resolved(index, file, line, func)
    return undynamic([(file, line, func or "")] + list(callers))[0][0] if file.startswith("<") else file


def read_events(path: str, rank: int | None = None, t0: float | None = None, index=None) -> list[Event]:
    """Parse a rank's events file; times become seconds since ``t0`` (default: the recorder's start).
    ``index`` (a :class:`~barrierlab.sites.CodeIndex`) gives callers' frames their real file names.
    A very long file is read in part: see :func:`read_events_kept`."""
    return read_events_kept(path, rank, t0, index)[0]


def read_events_kept(
    path: str, rank: int | None = None, t0: float | None = None, index=None, keep: int | None = None
) -> tuple[list[Event], Dropped]:
    """:func:`read_events`, reading at most ``keep`` lines (default :data:`LINES_KEPT`) from the start of the
    file and as many from its end, and saying how many events in between were not read."""
    events: dict[int, Event] = {}
    items, dropped = _lines_kept(path, keep)
    for item in items:
        if item.get("meta") == "start":
            rank = item["rank"] if rank is None else rank
            t0 = item["t0"] if t0 is None else t0
        elif "kind" in item:
            events[item["id"]] = Event(
                rank=rank if rank is not None else -1,
                kind=item["kind"],
                name=item["name"],
                start=item["t"] - (t0 or 0.0),
                seq=item.get("seq"),
                file=item.get("file"),
                line=item.get("line"),
                func=item.get("func"),
                sizes=item.get("sizes"),
                dtypes=item.get("dtypes"),
                is_async=bool(item.get("async")),
                callers=[(_resolved(index, f, n, c), n, c) for f, n, c in item.get("callers", ())],
            )
            event = events[item["id"]]
            if event.file and event.callers:  # a helper cloudpickle sent by value: find its file
                event.file = _placed(index, event.file, event.line, event.func, event.callers)
        elif item.get("id") in events:
            event = events[item["id"]]
            if "end" in item:
                event.end = item["end"] - (t0 or 0.0)
                event.error = item.get("error")
            if "done" in item:
                event.done = item["done"] - (t0 or 0.0)
                event.error = event.error or item.get("done_error")
    return sorted(events.values(), key=lambda e: e.start), dropped


def read_flight(
    path: str, rank: int | None = None, t0: float | None = None, index=None, events: list[Event] | None = None
) -> Flight | None:
    """torch's flight-recorder entries a rank's recorder copied into its events file (the latest copy of
    each entry wins), or None if it never copied any. ``events`` (this rank's, from :func:`read_events`
    with the same ``t0``) links each entry the learner's own call made to that call."""
    wall = None
    entries: dict[tuple[str, int], dict] = {}
    groups: dict[str, list[int]] = {}
    seen = False
    for item in _lines(path):
        if item.get("meta") == "start":
            rank = item["rank"] if rank is None else rank
            wall = item.get("wall")
            if t0 is not None and wall is not None:
                wall += t0 - item["t0"]  # wall time at the caller's t0
        elif "flight" in item:
            seen = True
            groups.update(item.get("groups") or {})
            for e in item["flight"]:
                entries[(str(e.get("pg")), int(e.get("rid") or 0))] = e
    if not seen:
        return None
    calls = sorted((e for e in events or () if e.kind in ("collective", "p2p")), key=lambda e: e.start)
    starts = [e.start for e in calls]
    result = []
    for e in sorted(entries.values(), key=lambda e: (e.get("ns") or 0, e.get("rid") or 0)):
        start = e["ns"] / 1e9 - wall if e.get("ns") and wall is not None else None
        frame = e.get("frames") or []
        file, line, func = frame[0] if frame else (None, None, None)
        entry = FlightEntry(
            rank=rank if rank is not None else -1,
            seq=int(e.get("seq") or 0),
            op=e.get("op", "?"),
            group=str(e.get("pg")),
            p2p=bool(e.get("p2p")),
            start=start,
            sizes=e.get("sizes"),
            dtypes=e.get("dtypes"),
            issuer=e.get("issuer"),
            file=_resolved(index, file, line, func) if file else None,
            line=line,
            func=func,
            callers=[(_resolved(index, f, n, c), n, c) for f, n, c in frame[1:]],
        )
        if entry.file and entry.callers:
            entry.file = _placed(index, entry.file, entry.line, entry.func, entry.callers)
        if e.get("mine") and start is not None and calls:
            i = bisect.bisect_right(starts, start + 1e-6) - 1
            if i >= 0:
                entry.call = calls[i]
        if entry.file:
            entry.where = str(Site(entry.file, entry.line, entry.func or ""))
        result.append(entry)
    return Flight(result, groups)
