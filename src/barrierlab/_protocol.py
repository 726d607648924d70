"""The contract between the three kinds of process barrierlab runs, written down in one place.

``kernel`` (``launch.py``) ──:class:`Launch`──► ``warm process`` (``_warm.py``) ──fork──► ``rank`` (``_rank.py``)

* what the kernel asks for: :class:`RunOptions` (the learner's choices, validated) inside a
  :class:`RunSpec` (everything every rank needs), and per rank a :class:`RankSpec`;
* what travels on the pipes between kernel and warm process: :class:`Ready`, :class:`Launch`,
  :class:`Started`, :class:`LaunchFailed`, :class:`SignalRanks`, :class:`Exited`, :class:`Swept`, :class:`Quit`, framed by :func:`send`/:func:`receive`;
* where a rank leaves what it did: the files named by :class:`RankFiles`;
* how a rank ended: a :class:`Status`, in an :class:`Outcome` file that ranks of ``barrierlab.run`` and
  torchrun workers (``barrierlab.torchrun``) both write, and one reader (:meth:`Outcome.read`) reads;
* how a rank's stack is recognised (``stacks.py``): :data:`RANK_PHASES` and :data:`RANK_CALLS_FN`, the names
  of the functions in ``_rank.py`` a rank passes through.

Nothing else in the package spells a rank file's name, a status, or a message.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import re
import select
import signal
import struct
import time
import types
import typing
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import BinaryIO, ClassVar

#: Captured when barrierlab is imported, before the learner's code runs: a rank that replaces ``json.dumps`` (a
#: ``partial`` with ``indent=2`` for its logs) must not change the lines barrierlab writes (attack12 r5).
_json_dumps = json.dumps


# --- how a rank ended ------------------------------------------------------------------------------------
class Status(str, Enum):
    """How a rank ended. A ``str``: ``status == "finished"`` and stored notebook outputs keep working."""

    FINISHED = ("finished", "the function returned on this rank")
    RAISED = ("raised", "the function raised an exception on this rank")
    SETUP_FAILED = ("setup failed", "the rank failed before the function started (loading it, or joining the group)")
    STOPPED = ("stopped at deadline", "the rank was still running at the run's deadline and was stopped")
    EXITED = ("exited", "the process exited (os._exit, sys.exit, a crash) before the function returned")
    KILLED = ("killed by signal", "the process was killed by a signal before the function returned")
    LOST = ("ended without a report", "under torchrun: the agent stopped the rank, or it died before reporting")

    description: str

    def __new__(cls, value: str, description: str) -> Status:
        member = str.__new__(cls, value)
        member._value_ = value
        member.description = description
        return member

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:  # a list of statuses prints as the words a learner reads: ['finished', ...]
        return repr(self.value)

    @property
    def ok(self) -> bool:
        return self is Status.FINISHED


def signal_name(number: int | None) -> str:
    """``9`` -> ``"SIGKILL"`` (the number as text when it is not a known signal)."""
    try:
        return signal.Signals(number).name
    except (ValueError, TypeError):
        return str(number)


def tidy(message: str) -> str:
    """Error text without what changes between runs and machines: gloo's build-machine source path
    (``[/__w/pytorch/.../gloo/transport/tcp/pair.cc:553]``), a peer's address and port, and gloo's
    boilerplate advice. Applied to every error text the package shows."""
    # the brackets' contents exclude "[" too, so each "[" starts a scan that ends at the next one: linear time
    # (with "[" allowed inside, a line of 40,000 "[" took seconds: every start rescanned the rest)
    message = re.sub(r"\[[^\[\]\n]*(?:gloo/|/__w/)[^\[\]\n]*\] ?", "", message)
    message = re.sub(r"/__w/\S+", "", message)
    message = re.sub(r" ?\[[0-9a-fA-F.:]+\]:\d+", "", message)
    return re.sub(r"\.? This is typically caused by [^\n]*", "", message)


UNSHOWN = "(its message could not be shown:"

#: What gloo raises on a rank whose peer's process ended (or closed its connections after its own timeout).
PEER_GONE = re.compile(r"Connection closed by peer|Connection reset by peer|Broken pipe")


def error_message(error: BaseException) -> str:
    """``str(error)``, or, when that raises (a learner's exception whose ``__str__`` fails, even with a
    KeyboardInterrupt or SystemExit), words that say so: the rank still reports the exception's type and its
    traceback. A lone surrogate in it (a file name that is not UTF-8) is escaped (:func:`encodable`)."""
    try:
        return encodable(str(error))
    except BaseException as failure:  # noqa: BLE001 - whatever __str__ raises, KeyboardInterrupt included
        return f"{UNSHOWN} str() raised {type(failure).__name__})"


#: The range of a C ``long`` (64 bits on Linux and macOS): CPython takes an exit code beyond it as -1.
_C_LONG = (-(2**63), 2**63 - 1)


#: How a rank ends whose outcome file could not be written (EX_IOERR), and how the line it writes on its stderr
#: first begins (the rank writes both; ``result`` reads them).
OUTCOME_UNWRITTEN = 74
OUTCOME_UNWRITTEN_TEXT = "barrierlab could not write this rank's outcome"


def exit_status(code: object) -> int:
    """The exit status ``raise SystemExit(code)`` (``sys.exit(code)``) gives a Python process, as CPython
    computes it: 0 for None; an int, bool included (``sys.exit(not ok)``: True is 1), as the system keeps it,
    its low 8 bits (-1 is 255; beyond a C long, 255); any other code (a message) 1, its text printed to stderr
    (:func:`exit_text`)."""
    if code is None:
        return 0
    if isinstance(code, int):
        number = int(code)
        return number & 0xFF if _C_LONG[0] <= number <= _C_LONG[1] else 255
    return 1


def exit_text(code: object) -> str | None:
    """What Python prints to stderr as it exits with ``code`` (``sys.exit("no data")``): the text of a code
    that is neither None nor an int, or None. Never raises."""
    if code is None or isinstance(code, int):
        return None
    return error_message(code) if isinstance(code, BaseException) else _text_of(code)


def _text_of(value: object) -> str:
    try:
        return encodable(str(value))
    except BaseException as failure:  # noqa: BLE001 - a learner's object whose __str__ raises
        return f"(the exit message could not be shown: str() raised {type(failure).__name__})"


def format_error(error: BaseException, tb) -> str:
    """The traceback of ``error`` from ``tb`` as Python prints it, with :func:`error_message` where Python
    would print ``<exception str() failed>``; never raises."""
    import traceback

    message = error_message(error)
    try:
        text = "".join(traceback.format_exception(type(error), error, tb))
    except BaseException:  # noqa: BLE001 - a traceback that cannot be formatted (a __str__ raising even
        # KeyboardInterrupt, which traceback lets through): the frames without the message, then its last line
        try:
            frames = "".join(traceback.format_list(traceback.extract_tb(tb)))
        except BaseException:  # noqa: BLE001
            frames = ""
        head = "Traceback (most recent call last):\n" if frames else ""
        return f"{head}{frames}{type(error).__qualname__}: {message}\n"
    return text.replace("<exception str() failed>", message)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str) -> str:
    """``text`` safe to print on a terminal: control characters other than newline and tab (ESC, BEL, carriage
    return, C1 codes), which a rank's output, span names or messages may hold, are shown as ``\\x1b``...
    instead of being obeyed (clearing the screen, retitling the window, hiding the lines before them), and a
    lone surrogate (see :func:`encodable`) as ``\\udce9``."""
    return _CONTROL.sub(_escape, text)


def encodable(value):
    """``value`` (a str, or the lists and dicts of a rank's JSON record) with every lone surrogate shown as
    ``\\udce9``, as ``repr`` shows it: Python names a file whose name is not UTF-8 with one
    (``os.fsdecode(b"donn\\xe9es.txt")``), and a str holding one can be neither printed on a UTF-8 terminal
    nor drawn by matplotlib nor written as UTF-8. Applied where a rank's text enters the kernel (its events'
    lines, its outcome's header), so that every text made of it can be shown."""
    if isinstance(value, str):
        return _SURROGATE.sub(_escape, value)
    if isinstance(value, list):
        return [encodable(v) for v in value]
    if isinstance(value, dict):
        return {encodable(k): encodable(v) for k, v in value.items()}
    return value


# --- what the kernel asks for --------------------------------------------------------------------------
@dataclass(frozen=True)
class RunOptions:
    """The learner's choices for one ``barrierlab.run`` call, already validated (see ``launch.validate``)."""

    world_size: int
    timeout: float  # the default group's timeout (init_process_group's), seconds
    deadline: float  # wall-clock limit of the whole run, seconds
    env: tuple[tuple[str, str], ...] = ()  # set in every rank before the group starts
    threads: int = 1
    linger: bool = False
    record: bool = True
    check: bool = False
    #: False: the learner's code calls ``init_process_group`` itself (the DDP tutorial's ``setup()``) and the
    #: function is called as ``mp.spawn`` calls it, ``fn(rank, *args)``; the group still joins the
    #: launcher's store (see ``RunSpec.store_port``).
    init: bool = True


@dataclass(frozen=True)
class RunSpec:
    """Everything every rank of one run needs; sent once to the warm process, which forks the ranks."""

    run_id: str
    run_dir: str  # private temporary folder of this run: the rank files
    payload: bytes  # cloudpickle of (fn, args, kwargs)
    options: RunOptions
    t0: float  # the kernel's time.monotonic() at launch: rank times are reported relative to it
    kernel_pid: int
    kernel_env: tuple[tuple[str, str], ...]  # the kernel's environment now, not the warm process's old one
    cwd: str
    sys_path: tuple[str, ...]
    #: When the call (fn, args, kwargs) is large it is not in ``payload`` (which is then empty) but written
    #: once to this file in ``run_dir``, which every rank reads for itself: one copy on the way, whatever
    #: the number of ranks, and each rank unpickles its own objects (copy-on-write semantics, as under
    #: torchrun: a rank's in-place change never reaches another rank).
    payload_path: str = ""
    #: The run's start, in clock ticks since boot (``_contain.ticks_now``): no process older belongs to it.
    start_ticks: int = 0
    #: The learner's own modules, imported fresh from their files in each rank (as torchrun workers import
    #: them), so module-level code sees the rank's environment: (module name, file, is a package).
    modules: tuple[tuple[str, str, bool], ...] = ()
    #: Port of the TCPStore the launcher hosts on 127.0.0.1 for this run (0: none). Ranks get it as
    #: MASTER_ADDR/MASTER_PORT with TORCHELASTIC_USE_AGENT_STORE=True, so an ``env://`` group joins it as a
    #: client, as torchrun's workers join the agent's store.
    store_port: int = 0
    #: Port of the next run's store, made ahead: the ranks the warm process pools after this run connect to it
    #: while they wait, so that a launch does not wait for their connections (0: none).
    next_store_port: int = 0
    #: The run's cgroup (its folder under the cgroup v2 mount; "" where the kernel could make none): every rank
    #: is in it before any of the learner's code runs, so everything the run starts is born in it and
    #: ``cgroup.kill`` ends it all, whoever killed the warm process (``_contain.make_run_cgroup``).
    cgroup: str = ""
    #: The next run's cgroup, made ahead: the warm process puts the ranks it pools after this run into it, so
    #: that they are in their run's cgroup before they are handed it ("" where none is made).
    next_cgroup: str = ""


@dataclass(frozen=True)
class RankSpec:
    """What one rank process is told: its run and its rank."""

    run: RunSpec
    rank: int

    @property
    def files(self) -> RankFiles:
        return RankFiles(self.run.run_dir, self.rank)


# --- the pipe between kernel and warm process -----------------------------------------------------------
@dataclass(frozen=True)
class Ready:
    """warm process -> kernel: torch is imported, ranks can be forked."""

    pid: int


@dataclass(frozen=True)
class Preloaded:
    """warm process -> kernel: the modules the lessons use (DDP, DCP, ...) are imported too; it imports them
    after ``Ready``, between launches, so that the first run does not wait for them."""


@dataclass(frozen=True)
class PreloadNow:
    """kernel -> warm process: preload at once, without waiting for the kernel to be idle: the kernel waits for
    it (``warm_up(wait=True)``: the script runner, before a training script that builds DDP)."""


@dataclass(frozen=True)
class Launch:
    """kernel -> warm process: fork ``spec.options.world_size`` ranks of this run."""

    spec: RunSpec


@dataclass(frozen=True)
class Started:
    """warm process -> kernel: the ranks of ``run_id`` are forked; ``pids[r]`` is rank r's process."""

    run_id: str
    pids: tuple[int, ...]
    #: ``start_times[r]``: when rank r started (clock ticks since boot), read while it was the warm
    #: process's unreaped child: with its PID, the rank's identity (a pidfd is checked against it).
    start_times: tuple[int, ...] = ()
    #: ``keys[r]``: the key rank r made for itself once forked (:data:`SEAL_KEY_SIZE` random bytes, b"" if it
    #: died first) and handed over on a pipe only it held; its outcome is sealed with it (:meth:`Outcome.write`).
    keys: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class LaunchFailed:
    """warm process -> kernel: the ranks of ``run_id`` could not be forked (``reason``: the OSError, such as
    too many open files after a rank lowered this process's limit); those forked already are killed and reaped."""

    run_id: str
    reason: str


@dataclass(frozen=True)
class Swept:
    """warm process -> kernel: every rank of ``run_id`` has ended and so has every process they started
    (``killed`` of them were still running and were killed)."""

    run_id: str
    killed: int


@dataclass(frozen=True)
class SignalRanks:
    """kernel -> warm process: send ``signum`` to every still-running rank of ``run_id`` (and no other)."""

    run_id: str
    signum: int


@dataclass(frozen=True)
class Exited:
    """warm process -> kernel: a rank of ``run_id`` ended; ``code`` for an exit, ``sig`` for a signal."""

    run_id: str
    rank: int
    pid: int
    code: int | None
    sig: int | None


@dataclass(frozen=True)
class Quit:
    """kernel -> warm process: kill every rank and exit."""


@dataclass(frozen=True)
class Become:
    """warm process -> a rank it forked ahead of time (its pool): become ``rank`` of the run ``spec``."""

    spec: RunSpec
    rank: int
    #: List the pages the rank copies from the warm process in :data:`WRITTEN_PAGES_FILE` as it ends
    #: (``_rank.list_written_pages``): the ranks pooled later copy them while they wait.
    list_pages: bool = False


Message = (
    Ready | Preloaded | PreloadNow | Launch | Started | LaunchFailed | SignalRanks | Exited | Swept | Quit | Become
)
_MESSAGES = (Ready, Preloaded, PreloadNow, Launch, Started, LaunchFailed, SignalRanks, Exited, Swept, Quit, Become)
#: The classes a frame may name: the messages and the specs a Launch carries. Nothing else is loaded.
_FRAME_CLASSES = {cls.__name__: cls for cls in (*_MESSAGES, RunSpec, RunOptions)}

_HEADER = struct.Struct(">I")
#: Largest frame (header excluded) either side sends or accepts. The largest real message is a Launch: its
#: call travels inline only up to ``launch.PAYLOAD_INLINE`` (256 KiB; larger ones go through a file), and the
#: rest is the kernel's environment (execve caps it near 2 MiB), sys.path and the learner's module names.
#: 16 MiB is several times that; the warm process's messages are under 2 KiB (a Started of 16 ranks).
MAX_FRAME = 16 << 20


class ProtocolError(ValueError):
    """The bytes on a pipe are not a message of this protocol: a frame too large, cut short, or naming
    anything but the protocol's own classes and the plain values they hold. Another process wrote them."""


def frame(message: Message) -> bytes:
    """The bytes :func:`send` writes for ``message``: its length, then its pickle."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) > MAX_FRAME:
        raise ProtocolError(f"a {type(message).__name__} message of {len(data):,} bytes exceeds {MAX_FRAME:,}")
    return _HEADER.pack(len(data)) + data


def send(fd: int, message: Message) -> None:
    """Write one message (a length-prefixed pickle) to a pipe, in one write when it fits the pipe's atomic
    size (every message of the warm process does): no other writer's bytes can land inside it."""
    if not _plain(message, type(message)):  # what receive would refuse is refused here, where it is made
        raise ProtocolError(f"{message!r:.200} is not a well-formed message (a field of another type)")
    view = memoryview(frame(message))
    while view:
        view = view[os.write(fd, view) :]


_READY = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR | select.POLLNVAL


def readable(fds, timeout: float | None) -> list[int]:
    """Which of ``fds`` can be read (or are at end of file, or closed), waiting at most ``timeout`` seconds (None:
    until one is). ``select.poll``, not ``select.select``: a notebook holding a thousand open files gives new
    descriptors numbers above 1024, which ``select`` refuses (attack9 a8)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN | select.POLLPRI)
    wait = None if timeout is None else max(0, math.ceil(timeout * 1000))
    return [fd for fd, events in poller.poll(wait) if events & _READY]


def writable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` can be written within ``timeout`` seconds (a broken pipe counts: the write says so)."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    ready = select.POLLOUT | select.POLLHUP | select.POLLERR | select.POLLNVAL
    return any(events & ready for _, events in poller.poll(max(0, math.ceil(timeout * 1000))))


def _read_exactly(fd: int, n: int, until: float | None = None) -> bytes | bytearray | None:
    """``n`` bytes; None at end of file before the first byte. With ``until`` (a time.monotonic()), a frame
    still incomplete then raises ProtocolError instead of blocking."""
    buffer = bytearray(n)
    view = memoryview(buffer)
    got = 0
    while got < n:
        if until is not None:
            if not readable([fd], until - time.monotonic()):
                raise ProtocolError(f"a frame stopped after {got} of its {n:,} bytes")
        count = os.readv(fd, [view[got:]])
        if not count:
            if got:
                raise ProtocolError(f"the pipe closed after {got} of a frame's {n:,} bytes")
            return None
        got += count
    return bytes(buffer) if n < 65536 else buffer


class _FrameUnpickler(pickle.Unpickler):
    """Loads only the protocol's own classes; a frame that names any other global (``posix._exit``, a
    learner's class) is refused before anything of it runs."""

    def find_class(self, module: str, name: str):
        if module == __name__ and name in _FRAME_CLASSES:
            return _FRAME_CLASSES[name]
        raise ProtocolError(f"a frame names {module[:80]}.{name[:80]}, which is not a message of barrierlab")


def _plain(value, kind) -> bool:
    """``value`` is exactly of the annotated type ``kind`` (a type, a union, a tuple[...] or a dataclass of
    the protocol, its fields checked in turn): no subclass, no other container."""
    return _checker(kind)(value)


#: annotated type -> the function that checks a value against it (:func:`_plain`). Built once per type: walking
#: the annotations for every value (typing.get_origin, get_args, get_type_hints) cost 0.75 ms per Launch, paid by
#: the kernel as it sent it, the warm process as it read it and again by each pooled rank reading its Become.
_CHECKERS: dict = {}


def _checker(kind):
    check = _CHECKERS.get(kind)
    if check is None:
        check = _CHECKERS[kind] = _make_checker(kind)
    return check


def _make_checker(kind):
    if isinstance(kind, types.UnionType):
        parts = tuple(_checker(part) for part in typing.get_args(kind))
        return lambda value: any(part(value) for part in parts)
    if kind is None or kind is type(None):
        return lambda value: value is None
    if typing.get_origin(kind) is tuple:
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            if _simple(args[0]):  # tuple[str, ...]: the types of the items, compared in C
                return lambda value: type(value) is tuple and set(map(type, value)) <= {args[0]}
            item = _checker(args[0])
            return lambda value: type(value) is tuple and all(map(item, value))
        if all(map(_simple, args)):  # tuple[str, str]: likewise
            return lambda value: type(value) is tuple and tuple(map(type, value)) == args
        items, n = tuple(_checker(arg) for arg in args), len(args)
        return lambda value: (
            type(value) is tuple and len(value) == n and all(check(x) for check, x in zip(items, value))
        )
    if kind in _FRAME_CLASSES.values():
        names = frozenset(f.name for f in fields(kind))
        hints = typing.get_type_hints(kind)
        checks = tuple((f.name, _checker(hints[f.name])) for f in fields(kind))
        return lambda value: (
            type(value) is kind
            and vars(value).keys() == names
            and all(check(getattr(value, name)) for name, check in checks)
        )
    if kind is float:
        return lambda value: type(value) in (float, int)
    return lambda value: type(value) is kind


def _simple(kind) -> bool:
    """A class whose values :func:`_plain` checks by their exact type alone."""
    return (
        isinstance(kind, type) and kind is not float and kind is not type(None) and kind not in _FRAME_CLASSES.values()
    )


def receive(fd: int, within: float | None = None) -> Message | None:
    """One message, or None when the other side has closed the pipe. ProtocolError for a frame larger than
    :data:`MAX_FRAME`, one not complete ``within`` seconds of its first byte (when given), or one that is not
    one of the messages above with fields of their declared types."""
    until = None if within is None else time.monotonic() + within
    header = _read_exactly(fd, _HEADER.size, until)
    if header is None:
        return None
    size = _HEADER.unpack(header)[0]
    if size > MAX_FRAME:
        raise ProtocolError(f"a frame claims {size:,} bytes, more than any message ({MAX_FRAME:,})")
    body = _read_exactly(fd, size, until)
    if body is None:
        raise ProtocolError(f"the pipe closed after the header of a {size:,}-byte frame")
    try:
        message = _FrameUnpickler(io.BytesIO(body)).load()
    except ProtocolError:
        raise
    except Exception as error:  # noqa: BLE001 - any malformed pickle is refused the same way
        raise ProtocolError(f"a frame is not a readable pickle ({type(error).__name__})") from None
    if type(message) not in _MESSAGES or not _plain(message, type(message)):
        raise ProtocolError(f"a frame holds a {type(message).__name__} that is not a well-formed message")
    return message


# --- the run's private folder -------------------------------------------------------------------------
#: A run's folder is ``<tmp>/barrierlab-run-<kernel pid>-<kernel start time>-<random>``: the owner's PID and
#: start time (clock ticks since boot) say whether the kernel that made it is still alive.
#: The environment variable naming the folder where ranks started by another launcher (torchrun) record.
RECORD_DIR_VARIABLE = "BARRIERLAB_RECORD_DIR"
RUN_DIR_PREFIX = "barrierlab-run-"
#: A run folder set aside to be removed in the background (``launch._set_aside``) is renamed
#: ``<its folder>/barrierlab-gone-<pid>-<start time>-<random>``, named for the kernel that removes it: if that
#: kernel dies first, the next kernel's first run removes it as it does a dead kernel's run folders.
GONE_DIR_PREFIX = "barrierlab-gone-"
_RUN_DIR = re.compile(r"^barrierlab-(?:run|gone)-(\d+)-(\d+)-[A-Za-z0-9_]+$")


def run_dir_prefix(pid: int, start_ticks: int) -> str:
    return f"{RUN_DIR_PREFIX}{pid}-{start_ticks}-"


def gone_dir_prefix(pid: int, start_ticks: int) -> str:
    return f"{GONE_DIR_PREFIX}{pid}-{start_ticks}-"


def run_dir_owner(name: str) -> tuple[int, int] | None:
    """(PID, start time) of the kernel that created a run folder named ``name`` (or set one aside under that
    name to remove it); None if it is not one."""
    match = _RUN_DIR.match(name)
    return (int(match.group(1)), int(match.group(2))) if match else None


#: The file of a large call in the run's folder (see ``RunSpec.payload_path``).
PAYLOAD_FILE = "payload"
#: The file in a run's folder where one rank lists the pages it copied from the warm process (see ``Become``).
WRITTEN_PAGES_FILE = "written-pages"


# --- where a rank leaves what it did ------------------------------------------------------------------
_RANK_FILE = re.compile(r"^rank(\d+)\.(stdout|stderr|events|stack|flight|outcome)$")


#: The signal that makes a rank's faulthandler write its stacks at the deadline: a real-time signal, not SIGUSR1,
#: which a learner's own ``faulthandler.register(signal.SIGUSR1)`` (the usual recipe for a hang) would take over,
#: leaving ``run.stuck`` empty (attack9 a13). SIGUSR1 where there are no real-time signals (macOS).
STACK_SIGNAL = signal.SIGRTMIN + 6 if hasattr(signal, "SIGRTMIN") else signal.SIGUSR1


@dataclass(frozen=True)
class RankFiles:
    """The files of one rank in a run's (or a torchrun job's) folder.

    ``stdout``/``stderr`` (file descriptors 1 and 2, so C++ output is captured too), ``events`` (the
    recorder), ``stack`` (faulthandler, on :data:`STACK_SIGNAL`), ``flight`` (torch's flight recorder) and ``outcome``
    (how the rank ended, written last and atomically).
    """

    folder: str
    rank: int

    def of_kind(self, kind: str) -> str:
        """The path of this rank's file of ``kind`` (one of the kinds :func:`barrierlab._files.rank_files` finds)."""
        return os.path.join(self.folder, f"rank{self.rank}.{kind}")

    stdout = property(lambda self: self.of_kind("stdout"))
    stderr = property(lambda self: self.of_kind("stderr"))
    events = property(lambda self: self.of_kind("events"))
    stack = property(lambda self: self.of_kind("stack"))
    flight = property(lambda self: self.of_kind("flight"))
    outcome = property(lambda self: self.of_kind("outcome"))
    #: Written (an :class:`Outcome` naming the program, sealed) by a rank just before it replaces itself with
    #: another program (``os.execv``): the program's exit status is then the rank's outcome.
    replaced = property(lambda self: self.of_kind("replaced"))

    @staticmethod
    def ranks_in(folder: str) -> list[int]:
        """The ranks that left an outcome or an events file in ``folder``, sorted."""
        found = set()
        for name in os.listdir(folder):
            match = _RANK_FILE.match(name)
            if match and match.group(2) in ("events", "outcome"):
                found.add(int(match.group(1)))
        return sorted(found)


#: The file whose exclusive creation decides which failing rank prints a torchrun job's diagnosis.
DIAGNOSIS_CLAIM = "diagnosis.claimed"


def claim_diagnosis(folder: str) -> bool:
    """True for the first process to ask, per record folder, False for every later one: under torchrun only
    one failing rank prints the diagnosis."""
    try:
        os.close(
            os.open(os.path.join(folder, DIAGNOSIS_CLAIM), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        )
    except FileExistsError:
        return False
    return True


def write_new_file(path: str, data) -> None:
    """Write ``data`` (bytes or a buffer) to a file that must not exist yet (never through a planted symlink),
    readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data).cast("B")
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _same(a: bytes, b: bytes) -> bool:
    import hmac

    return hmac.compare_digest(a, b)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is not a finite number")
    return value


def finite_json(data: bytes | str):
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and numbers too large for a float (Python's reader
    takes them; barrierlab's writers never write them, and a time that is not finite breaks every sum and
    axis made of it)."""
    return json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)


# --- how a rank ended: one format for both launchers -----------------------------------------------------
#: Bytes of a rank's key, and of the seal (HMAC-SHA256) at the end of an outcome written with it.
SEAL_KEY_SIZE = SEAL_SIZE = 32


class ForgedOutcome(ValueError):
    """An outcome file whose seal does not match its rank's key: another process wrote it."""


def _seal(key: bytes, data: bytes) -> bytes:
    import hashlib
    import hmac

    return hmac.new(key, data, hashlib.sha256).digest()


_BLOBS = ("value", "exception")
#: Bytes of a pickle read at a time (the reader checks its time limit between pieces).
PICKLE_CHUNK = 8 << 20


def _digest(data: bytes | None) -> str | None:
    import hashlib

    return None if data is None else hashlib.sha256(data).hexdigest()


def _megabytes(n: int) -> str:
    return f"{n / 1e6:,.0f} MB" if n >= 10**6 else f"{n:,} bytes"


#: A pickle of at most this many bytes is read whatever the time (16 ranks' take milliseconds): a rank that
#: returned early keeps its value when another rank is stopped at the deadline and collecting starts after it.
PICKLE_ALWAYS_READ = 1 << 20


def _read_until(f: BinaryIO, n: int, until: float | None) -> bytes | None:
    """``n`` bytes of ``f`` (fewer at its end), read in pieces; None once the monotonic clock passes ``until``
    (for a pickle of more than :data:`PICKLE_ALWAYS_READ` bytes)."""
    parts, got = [], 0
    while got < n:
        if until is not None and n > PICKLE_ALWAYS_READ and time.monotonic() > until:
            return None
        part = f.read(min(PICKLE_CHUNK, n - got))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


#: The outcome's times: one that is not a finite number is left out when read, not the whole outcome.
_TIMES = ("t_start", "t_end", "clock")
#: Longest header line of an outcome file read, in bytes (its texts: message, traceback, value's repr).
OUTCOME_HEADER_LIMIT = 8 << 20
#: Longest text an outcome holds per field (message, traceback, value's repr...), in characters: a longer one is
#: written as its head and tail with a line saying how much was left out (:func:`clip_text`). JSON writes a
#: character in at most 12 bytes, so the header's six texts stay under :data:`OUTCOME_HEADER_LIMIT`: a 9 MB message
#: made the rank's outcome unreadable, and the report said the rank's files were damaged (attack10 a16).
OUTCOME_TEXT_KEPT = 64 << 10


def clip_text(text: str, keep: int = OUTCOME_TEXT_KEPT) -> str:
    """``text`` if it has at most ``keep`` characters, else its first and last ``keep // 2`` with a line between
    them saying how many characters were left out."""
    if not isinstance(text, str) or len(text) <= keep:
        return text
    half = keep // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half:,} characters left out by barrierlab …]\n{text[-half:]}"


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    """An int or float that converts to a finite float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


_OUTCOME_TYPES = {
    "rank": lambda v: _is_int(v) and v >= 0,
    "world_size": lambda v: _is_int(v) and v >= 1,
    "status": lambda v: isinstance(v, str),
    "pid": _is_int,
    "t_start": lambda v: v is None or _is_number(v),
    "t_end": lambda v: v is None or _is_number(v),
    "clock": _is_number,
    "exit_code": lambda v: v is None or _is_int(v),
    "error_type": lambda v: isinstance(v, str),
    "message": lambda v: isinstance(v, str),
    "traceback": lambda v: isinstance(v, str),
    "value_repr": lambda v: isinstance(v, str),
    "send_error": lambda v: isinstance(v, str),
    "replaced_by": lambda v: isinstance(v, str),
    "events_lost": lambda v: isinstance(v, str),
}


@dataclass
class Outcome:
    """How one rank ended, written by the rank itself (``barrierlab.run`` and torchrun workers alike).

    On disk: one line of JSON (every field but the pickles, plus their lengths), then the pickled return
    value and the pickled exception, raw. Times are the rank's ``time.monotonic()``; ``clock`` is
    ``time.time() - time.monotonic()`` on the rank, the anchor that aligns ranks of different machines.
    The pickles are present only under ``barrierlab.run``, and are unpickled by the kernel with care
    (``unpickle.unpickle_isolated``); under torchrun only ``value_repr`` is kept.
    """

    rank: int
    world_size: int
    status: Status
    pid: int = 0
    t_start: float | None = None  # when the learner's function began (after init_process_group)
    t_end: float | None = None
    clock: float = 0.0
    exit_code: int | None = None
    error_type: str = ""  # e.g. "builtins.ValueError"
    message: str = ""  # str(exception)
    traceback: str = ""
    value_repr: str = ""
    send_error: str = ""  # why the return value could not be pickled, if it could not
    #: The command line of the program the rank replaced itself with (``os.execv`` and the like), written just
    #: before the exec (in ``RankFiles.replaced``); "" if it did not. The process's exit status is then the
    #: rank's outcome.
    replaced_by: str = ""
    #: What became of the rank's events file while it ran, when it is no longer the one its recorder made
    #: ("removed", "replaced by another file"); "" if it still is (``record.lost_record``).
    events_lost: str = ""
    value: bytes | None = field(default=None, repr=False)
    exception: bytes | None = field(default=None, repr=False)
    #: What :meth:`read` left out of the file it read (a time that is not finite), in words; never written.
    notes: ClassVar[tuple[str, ...]] = ()
    #: The pickles :meth:`read_from` left unread, by name ("value"), with their size and why; never written.
    unread: ClassVar[dict[str, str]] = {}

    def write(self, path: str, key: bytes = b"") -> None:
        """Write atomically (temporary file, then rename) and never through a planted symlink. With the rank's
        ``key``, the header also holds each pickle's SHA-256 (``digests``) and the file ends with a seal
        (HMAC-SHA256 of the header line) that only this rank can make: the kernel reads an outcome only if its
        seal matches (other ranks can write into the run's folder), and a pickle only if its digest does; so the
        header is proven the rank's without reading a pickle the kernel leaves unread (too large, or too late)."""
        header = {f.name: clip_text(getattr(self, f.name)) for f in fields(self) if f.name not in _BLOBS}
        header["status"] = self.status.value
        if self.exit_code is not None:  # an int as the reader requires, whatever a writer was given (True)
            header["exit_code"] = exit_status(self.exit_code)
        header["blobs"] = [
            len(getattr(self, name) or b"") if getattr(self, name) is not None else None for name in _BLOBS
        ]
        if key:
            header["digests"] = [_digest(getattr(self, name)) for name in _BLOBS]
        line = _json_dumps(header).encode() + b"\n"
        data = line + b"".join(getattr(self, name) or b"" for name in _BLOBS)
        if key:
            data += _seal(key, line)
        tmp = f"{path}.{os.getpid()}.tmp"
        write_new_file(tmp, data)
        os.replace(tmp, path)

    @classmethod
    def read(
        cls,
        path: str,
        key: bytes = b"",
        *,
        pickles: bool = True,
        until: float | None = None,
        value_limit: int | None = None,
    ) -> Outcome | None:
        """The outcome in ``path``; None if there is none. ValueError if the file is not an outcome: not a
        regular file (``_files.UnsafeEntry``), a header longer than :data:`OUTCOME_HEADER_LIMIT`, fields of the
        wrong type, or pickles that do not fit the file; :class:`ForgedOutcome` if ``key`` is given and the
        file's seal (or a pickle's digest) does not match it. A rank writes this file: it is untrusted input.
        ``pickles``, ``until``, ``value_limit``: see :meth:`read_from`."""
        from barrierlab import _files

        try:
            f = _files.open_regular(path)
        except FileNotFoundError:
            return None
        with f:
            return cls.read_from(f, path, key, pickles=pickles, until=until, value_limit=value_limit)

    @classmethod
    def read_from(
        cls,
        f: BinaryIO,
        path: str,
        key: bytes = b"",
        *,
        pickles: bool = True,
        until: float | None = None,
        value_limit: int | None = None,
    ) -> Outcome:
        """The outcome in the open regular file ``f`` (read from its start), checked as :meth:`read` does;
        ``path`` names it in errors. The kernel keeps a rank's outcome open from the moment it sees the rank
        end, and reads it from there if the file was removed from the run's folder meanwhile.

        What is read is bounded: the header by :data:`OUTCOME_HEADER_LIMIT`; the pickles not at all without
        ``pickles`` (``barrierlab report`` uses none), the value not if it is larger than ``value_limit`` bytes,
        and neither, if larger than :data:`PICKLE_ALWAYS_READ`, once the monotonic clock passes ``until`` (checked
        every :data:`PICKLE_CHUNK` bytes). A
        pickle left unread is None, and :attr:`unread` says why, by name (with ``pickles`` false, each is None)."""
        from barrierlab import _files

        f.seek(0)
        size = os.fstat(f.fileno()).st_size
        line = _files.bounded_line(f, OUTCOME_HEADER_LIMIT)
        if line is None:
            raise ValueError(f"{path}: its header is longer than {OUTCOME_HEADER_LIMIT:,} bytes")
        try:
            header = encodable(json.loads(line))  # NaN and Infinity are read, then the times below are checked
        except (ValueError, RecursionError) as error:
            raise ValueError(f"{path}: its header is not JSON ({type(error).__name__})") from None
        if not isinstance(header, dict):
            raise ValueError(f"{path}: its header is not a JSON object")
        sizes = header.pop("blobs", [None, None])
        if not (isinstance(sizes, list) and len(sizes) == len(_BLOBS)):
            raise ValueError(f"{path}: 'blobs' must list {len(_BLOBS)} sizes")
        digests = header.pop("digests", None)
        left = size - len(line)
        for name, n in zip(_BLOBS, sizes):
            if n is not None and not (_is_int(n) and 0 <= n <= left):
                raise ValueError(f"{path}: the {name} pickle's size {n!r} does not fit the file")
            left -= n or 0
        if key:  # the header first: what it says is the rank's before any pickle is read
            if not (
                isinstance(digests, list)
                and len(digests) == len(_BLOBS)
                and all(
                    (d is None) == (n is None) and (d is None or isinstance(d, str)) for d, n in zip(digests, sizes)
                )
            ):
                raise ForgedOutcome(f"{path}: its header does not list its pickles' digests")
            f.seek(len(line) + sum(n or 0 for n in sizes))
            seal = f.read(SEAL_SIZE + 1)
            if len(seal) != SEAL_SIZE or not _same(seal, _seal(key, line)):
                raise ForgedOutcome(f"{path}: its seal does not match the rank's key")
        blobs: dict[str, bytes | None] = {}
        unread: dict[str, str] = {}
        offset = len(line)
        for i, (name, n) in enumerate(zip(_BLOBS, sizes)):
            blobs[name] = None
            if n is None or not pickles:
                continue
            why = ""
            if name == "value" and value_limit is not None and n > value_limit:
                why = f"over the {value_limit / 2**20:g} MiB limit"
            if not why:
                f.seek(offset)
                data = _read_until(f, n, until)
                if data is None:
                    why = "still unread when the run's deadline passed"
                elif len(data) != n:
                    raise ValueError(f"{path}: the {name} pickle is cut short")
                elif key and not _same(_digest(data).encode(), digests[i].encode()):
                    raise ForgedOutcome(f"{path}: its {name} pickle does not match its seal")
                else:
                    blobs[name] = data
            if why:
                unread[name] = f"{_megabytes(n)}, {why}"
            offset += n
        values, notes = {}, []
        for name in _TIMES:  # a time that is not finite is left out (with a note): the rest of the outcome stands
            value = header.get(name)
            if _is_number(value) or value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            notes.append(f"its outcome's {name} ({str(value)[:20]}) is not a finite number: left out")
            del header[name]
        for spec in fields(cls):
            if spec.name in _BLOBS or spec.name not in header:
                continue
            value = header[spec.name]
            if not _OUTCOME_TYPES[spec.name](value):
                raise ValueError(f"{path}: field {spec.name!r} has the wrong type ({type(value).__name__})")
            values[spec.name] = value
        if "rank" not in values or "world_size" not in values or "status" not in values:
            raise ValueError(f"{path}: rank, world_size and status are required")
        try:
            values["status"] = Status(values["status"])
        except ValueError:
            raise ValueError(f"{path}: unknown status {values['status'][:80]!r}") from None
        outcome = cls(**values, **blobs)
        if notes:
            outcome.notes = tuple(notes)
        if unread:
            outcome.unread = unread
        return outcome

    @classmethod
    def read_header(cls, path: str, limit: int = 64 * 1024) -> Outcome | None:
        """The outcome in ``path`` without its pickles, reading at most ``limit`` bytes; None if there is none
        or it cannot be read (a view that only needs the status never fails on a damaged file)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                header = encodable(finite_json(f.readline(limit)))
            known = {f.name for f in fields(cls)} - set(_BLOBS)
            values = {k: v for k, v in header.items() if k in known}
            values["status"] = Status(values["status"])
            return cls(**values)
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
            return None

    def to_json(self) -> dict:
        """The fields without the pickles (for logs and tests)."""
        return {k: v for k, v in asdict(self).items() if k not in _BLOBS}


def clock_anchor() -> float:
    """``time.time() - time.monotonic()`` now: adding it to a monotonic time gives wall-clock time."""
    return time.time() - time.monotonic()


# --- how stacks.py recognises a rank's own frames ---------------------------------------------------------
#: The source file of the rank process's code.
RANK_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_rank.py")
#: Functions of ``_rank.py`` a rank passes through before the learner's code, by name, and what a rank
#: stopped inside each one was doing.
RANK_PHASES = {
    "load_the_call": "loading your function and importing what it needs",
    "join_the_group": "joining the process group (init_process_group)",
    "wait_for_every_rank": "waiting for the other ranks to join the group",
    "init_process_group_on_the_launchers_store": "joining the process group (your init_process_group)",
}
#: The function of ``_rank.py`` that calls the learner's function: every frame inside it is the learner's.
RANK_CALLS_FN = "call_the_function"
