"""Unpickling what the ranks returned, without letting it hurt the kernel or outlast the run's deadline.

A rank runs the learner's code, so the pickles of its return value and exception are untrusted: their
unpickling may run any code (``__reduce__``), which may exit the process, crash it, hang, or take long.

* Plain data (numbers, strings, containers of them, built-in exceptions, torch exceptions of modules this process
  has already imported whose classes add no code to the built-in one's (never an import here: a pickle may name
  any module, attack10 a03), tensors, whose storage
  goes through torch's ``weights_only`` loader) in a pickle of at most :data:`INLINE_LIMIT` bytes is unpickled
  directly: no code of the learner's runs; so is a larger one of at most :data:`OPS_LIMIT` opcodes (a tensor's
  storage is one of them); not one whose sets and dicts hold many keys a rank can make hash alike (``_direct``). Any other larger plain pickle is unpickled in a throwaway child first (below),
  and then here only if it fits: at most :data:`VALUE_MEMORY` per value, :data:`RUN_MEMORY` for the run, and no
  later than the deadline (:data:`LOAD_GRACE`).
* Anything else is unpickled in a throwaway child forked from this process, one per distinct value, all at once,
  within what remains of the run's deadline (``within``). The child keeps what it unpickled alive until it
  exits with ``os._exit`` (a ``__del__`` that hangs costs nothing), and hands the value back in a restricted
  pickle that this process loads without running any code of the learner's, ever: plain data, tensors,
  numpy arrays and scalars as they are; an object of a class of the learner's (a module this process has
  imported, or the notebook) whose pickling the class does not customise (no ``__reduce__``,
  ``__setstate__``, ``__getstate__``, ``__new__``, slots) as an empty shell given the object's attributes,
  whose ``__class__`` is then set here to the real class (dataclasses, plain classes, named tuples,
  exceptions: the class's own code is never called); anything else as a :class:`NotRebuilt` stand-in that
  shows the value's ``repr`` as the child saw it. So a value that runs code when unpickled runs it in the
  child only: it can end or slow the child, never this process, and there is no second unpickling here.
* What a trial child writes back is untrusted too (the value's code runs in it: it may write the frame, and the
  report of its cost, itself; attack30 a02, a03): it is read only up to the length its frame announces, and a
  frame longer than :data:`FRAME_MOST` (or the run's :data:`RUN_MEMORY`) is refused at its header. The memory and
  time rebuilding the value here takes are then measured by a *measuring* child forked from this process, which
  runs none of the value's code (``plain_loads`` of the rank's pickle, or ``load_handed`` of what was handed
  back), under the same memory limit and the deadline (``_measure_here``); a handed-back pickle whose size bounds
  its cost (``_direct``, naming only plain constructors and shells: ``_loads_at_once``) is loaded at once.
* The children are forked by a *keeper* (forked from this process, running none of the learner's code), a
  child subreaper: whatever a child starts, however it detaches (``setsid``, a double fork, a shell's ``&``),
  stays the keeper's descendant, and the keeper kills all of it when the children have ended, when this
  process says stop, or when this process dies (its control pipe closes). The children die with the keeper
  (``PR_SET_PDEATHSIG``), ignore SIGINT, and are killed and reaped on every way out of the check, so Ctrl-C
  ends it at once. A child can kill the keeper (its parent, the same user): where run cgroups are made, the
  keeper is in a cgroup of the check's own, which this process kills when the check ends (attack30 a01).

A class that defines ``__del__`` (it, or a class it derives from, other than a built-in one) is not rebuilt either:
its ``__del__`` would run in the kernel when the value is dropped (a re-run cell drops the previous Run), with no
call of the learner's; such a value comes back as a :class:`NotRebuilt` stand-in with its ``repr``.

What it does not protect against: a value built of at most :data:`OPS_LIMIT` objects whose bytes alone (each
at most ``collect.VALUE_LIMIT``, read by the launcher) exhaust the kernel's memory, a malformed tensor storage
that crashes torch's own loader, and what the learner's classes do once the values are theirs and the learner
uses them (their methods, their ``__repr__`` when the run is shown, ``__eq__``/``__hash__`` when compared).
"""

from __future__ import annotations

import abc
import gc
import io
import os
import pickle
import pickletools
import signal
import struct
import sys
import time
import types

from barrierlab import _contain, _protocol
from barrierlab._protocol import signal_name

#: How long checking the returned values may take when no deadline is given (seconds).
UNPICKLE_TIMEOUT = 10.0
#: Pickles of at most this many bytes are unpickled here directly when they hold plain data: a plain pickle
#: can still grow about 35 times (two bytes make an empty list: 56 bytes and a slot), so a larger one is first
#: unpickled in a throwaway child, which says how much memory it took and how long (see the module's docstring).
INLINE_LIMIT = 256 << 10
#: ... unless it ends within this many opcodes (:func:`_direct`): a tensor's storage is one long byte run.
OPS_LIMIT = 10_000
#: Most memory one returned value may take once unpickled here, and all of a run's values together: beyond,
#: the rank fails with the figure (a 60 MiB pickle of empty lists takes 2 GiB and, with the collector on, a
#: minute to rebuild). The trial child itself may use at most ``VALUE_MEMORY`` more than the kernel had.
VALUE_MEMORY, RUN_MEMORY = 256 << 20, 1 << 30
#: A value the child rebuilt in s seconds is rebuilt here only if s fits in what is left of the deadline plus this.
LOAD_GRACE = 0.2


class _NeedsIsolation(Exception):
    pass


#: Globals a pickle may name and still be unpickled directly: constructors of plain data, built-in and torch
#: exceptions, and torch's tensor rebuilders, which run no code of the learner's. Anything else is unpickled
#: in a throwaway process first.
_PLAIN = {
    ("builtins", n)
    for n in (
        "int",
        "float",
        "complex",
        "str",
        "bytes",
        "bytearray",
        "list",
        "dict",
        "tuple",
        "set",
        "frozenset",
        "bool",
        "slice",
        "range",
        "NoneType",
    )
}
_PLAIN |= {("collections", "OrderedDict"), ("collections", "deque"), ("torch", "Size"), ("torch", "device")}
_PLAIN |= {("torch._utils", n) for n in ("_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_parameter")}
#: Value classes of the standard library: each pickles as a call of the class with plain arguments (or its own
#: state, for UUID) and runs only the standard library's code when rebuilt.
_VALUE_CLASSES = {
    *(("datetime", n) for n in ("date", "time", "datetime", "timedelta", "timezone")),
    *(("pathlib", n) for n in ("PurePath", "PurePosixPath", "PureWindowsPath", "Path", "PosixPath", "WindowsPath")),
    ("fractions", "Fraction"),
    ("decimal", "Decimal"),
    ("uuid", "UUID"),
}
_PLAIN |= _VALUE_CLASSES


def _load_storage_weights_only(data: bytes):
    """What ``torch.storage._load_from_bytes`` does for a pickled tensor's storage, but with torch's
    restricted (``weights_only``) unpickler, which refuses anything but tensors and plain data."""
    import torch

    return torch.load(io.BytesIO(data), weights_only=True)


#: Constructors of plain data whose argument can make far more than the pickle holds: ``list(range(N))``,
#: ``bytearray(N)``, ``Fraction(huge, huge)`` (attack9 a1, a2: 60 bytes held the kernel 2.3 GB or 40 s). Called
#: here, they are given only arguments whose cost the pickle's own size bounds; others go to the trial child.
_BUILDS_FROM_ARGUMENT = {
    *(("builtins", n) for n in ("list", "tuple", "set", "frozenset", "dict", "bytes", "bytearray", "str")),
    ("collections", "deque"),
    ("collections", "OrderedDict"),
    ("torch", "Size"),
    ("fractions", "Fraction"),
    ("decimal", "Decimal"),
}
#: A ``range`` handed to one of them may hold at most this many numbers; an int at most this many bits (a
#: ``bytes(N)``/``bytearray(N)`` of that size, a Fraction's terms).
RANGE_KEPT, INT_BITS_KEPT = 1 << 16, 1 << 16


def _costly(build, argument) -> bool:
    """Whether ``build(argument)`` can cost more than the pickle that holds ``argument`` bounds."""
    if isinstance(argument, range):
        try:
            return len(argument) > RANGE_KEPT
        except OverflowError:  # more than sys.maxsize numbers
            return True
    if isinstance(argument, int):  # bytes(N) and bytearray(N) make N zero bytes; a Fraction reduces its terms
        return argument.bit_length() > INT_BITS_KEPT or (build in (bytes, bytearray) and argument > RANGE_KEPT)
    if isinstance(argument, str):  # Fraction("1e10000000") builds 10**10000000
        return build.__name__ == "Fraction" and any(c in argument for c in "eE")
    return False


def _bounded(build):
    """``build`` for the plain unpickler: called with cheap arguments only (see :data:`_BUILDS_FROM_ARGUMENT`);
    a costly one sends the whole pickle to the trial child, which runs under a memory limit and the deadline."""

    def guarded(*args, **kwargs):
        for argument in (*args, *kwargs.values()):
            if _costly(build, argument):
                raise _NeedsIsolation(f"{getattr(build, '__qualname__', build)} of a costly argument")
        return build(*args, **kwargs)

    return guarded


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _BUILDS_FROM_ARGUMENT:
            return _bounded(super().find_class(module, name))
        if (module, name) in _PLAIN:
            return super().find_class(module, name)
        if (module, name) == ("torch.storage", "_load_from_bytes"):
            return _load_storage_weights_only
        if module == "builtins" or module == "torch" or module.startswith("torch."):
            found = _lookup_here(module, name)  # never an import: a rank may name any module (attack10 a03, a04)
            if isinstance(found, type) and issubclass(found, BaseException) and _called_cheaply(found):
                return found
            if module == "torch" and type(found).__name__ == "dtype":
                return found
        raise _NeedsIsolation(f"{module}.{name}")


#: What a library's exception class may define (it, or a class it derives from other than a built-in one) and
#: still be called here with the rank's arguments: then calling it runs only the built-in exception's code, whose
#: cost the pickle's size bounds. A torch exception whose ``__init__`` formats its arguments (``CppCompileError``
#: joins a list: a 230 kB pickle made a 1.5 GB string, attack10 a08) is rebuilt by the trial child, and comes back
#: as a shell whose class is set here, its ``__init__`` never called.
_CALL_CODE = ("__init__", "__new__", "__setattr__", "__setstate__", "__getattribute__", "__getattr__",
              "__reduce__", "__reduce_ex__", "__del__", "__init_subclass__")  # fmt: skip


def _called_cheaply(cls: type) -> bool:
    """Whether calling the exception class ``cls`` (and setting its state) runs no code but the built-in one's."""
    if type(cls) is not type:
        return False
    for klass in type.__dict__["__mro__"].__get__(cls):
        if klass.__module__ == "builtins":
            continue
        names = vars(klass)
        if any(name in names for name in _CALL_CODE):
            return False
        if any(hasattr(type(v), "__set__") for k, v in names.items() if k not in ("__dict__", "__weakref__")):
            return False  # a property or other data descriptor: setting the state would run it
    return True


def plain_loads(data: bytes):
    """Unpickle plain data only; ``_NeedsIsolation`` as soon as the pickle names anything else."""
    return _PlainUnpickler(io.BytesIO(data)).load()


def _failure(error: BaseException) -> str:
    try:
        return f"{type(error).__name__}: {error}"[:2000]
    except Exception:  # noqa: BLE001 - an exception whose str() raises
        return type(error).__name__


def unpickle_isolated(blobs: list[bytes], within: float | None = None) -> list[tuple[bool, object]]:
    """Unpickle each blob without letting it hurt this process: ``(True, value)`` or ``(False, reason)``,
    taking at most about ``within`` seconds (default :data:`UNPICKLE_TIMEOUT`); see the module's docstring."""
    budget = UNPICKLE_TIMEOUT if within is None else max(float(within), 0.0)
    give_up = time.monotonic() + budget
    results: list[tuple[bool, object] | None] = [None] * len(blobs)
    suspect = []
    for i, data in enumerate(blobs):
        if not _direct(data):
            suspect.append(i)
            continue
        try:
            results[i] = (True, plain_loads(data))
        except _NeedsIsolation:
            suspect.append(i)
        except Exception as error:
            results[i] = (False, _failure(error))
    if suspect:
        distinct = list(dict.fromkeys(blobs[i] for i in suspect))  # every rank returned the same: one child
        if hasattr(os, "fork"):
            verdicts = dict(zip(distinct, _trials(distinct, give_up, budget)))
        else:
            verdicts = dict.fromkeys(distinct, ("it cannot be checked safely here (no fork)", None))
        _measure_here(verdicts, give_up, budget)
        taken = 0  # memory the values rebuilt here take, by the measure of the children that ran no code of theirs
        for i in suspect:
            verdict, handed = verdicts[blobs[i]]
            if not verdict:
                verdict = _too_costly(handed, taken, give_up)
            if verdict:
                results[i] = (False, verdict)
                continue
            kind, memory, _, body = handed
            try:
                results[i] = (True, plain_loads(blobs[i]) if kind == _PLAIN_DATA else load_handed(body))
                taken += memory
            except Exception as error:  # noqa: BLE001 - what the child handed back is untrusted too
                results[i] = (False, f"what the check handed back cannot be read ({_failure(error)})")
    return results  # type: ignore[return-value]


def _measure_here(verdicts: dict, give_up: float, budget: float) -> None:
    """Replace the memory and time each trial child said its value took by what rebuilding it the way this
    process would (``plain_loads`` of the rank's pickle, or ``load_handed`` of what the child handed back)
    takes in a *measuring* child forked from this process, all at once, until ``give_up``. The trial child ran
    the value's code, which may write any report it likes (attack30 a03: "0 bytes, 0 s", then 40,000 keys
    hashing alike that took the kernel 14 s past a 3 s deadline); the measuring child runs none of it, under the
    same memory limit, so its figures are this process's. A value whose child's own report is already too
    costly, or whose measuring child fails, runs out of memory or of time, is not rebuilt here."""
    jobs = []  # (the rank's pickle, kind, what is rebuilt here)
    for blob, (verdict, handed) in verdicts.items():
        if verdict:
            continue
        if why := _too_costly(handed, 0, give_up):  # too costly by its own child's word: no need to measure
            verdicts[blob] = (why, None)
            continue
        kind, _, _, body = handed
        if kind == _HANDED and _loads_at_once(body):
            continue  # its size bounds what loading it here costs
        jobs.append((blob, kind, blob if kind == _PLAIN_DATA else body))
    if not jobs:
        return
    for (blob, kind, _), (why, cost) in zip(jobs, _measurements([(k, d) for _, k, d in jobs], give_up, budget)):
        body = verdicts[blob][1][3]
        verdicts[blob] = (why, None) if why else ("", (kind, cost[0], cost[1], body))


#: What a handed-back pickle may name and still be loaded here without a measuring child, when :func:`_direct`
#: bounds its cost by its size: plain data's constructors and the shells'; never numpy's or torch's rebuilders of
#: other tensors (a quantized tensor allocates the size its pickle names before its storage is checked).
_AT_ONCE_NAMES = _PLAIN | {(__name__, n) for n in ("_not_rebuilt", "_instance", "_exception", "_tuple_instance")}
_AT_ONCE_NAMES |= {("torch.storage", "_load_from_bytes")}
_PUT_OPS = frozenset(("PUT", "BINPUT", "LONG_BINPUT"))


def _loads_at_once(body: bytes) -> bool:
    """Whether what a trial child handed back may be loaded here at once: :func:`_direct` says its size bounds
    its cost, and every global it names is in :data:`_AT_ONCE_NAMES` (a name not followed through the memo is
    taken as any name). A small dataclass then costs no second fork (about 30 ms with torch loaded)."""
    if not _direct(body):
        return False
    pushed: list[str | None] = [None, None]  # the last two values pushed, where they are strings
    memo: dict[int, str | None] = {}
    try:
        for opcode, arg, _ in pickletools.genops(body):
            name = opcode.name
            if name == "STOP":
                return True
            if name == "GLOBAL" or name == "INST":
                module, _, qualname = str(arg).partition(" ")
                if (module, qualname) not in _AT_ONCE_NAMES:
                    return False
            elif name == "STACK_GLOBAL":
                if (pushed[0], pushed[1]) not in _AT_ONCE_NAMES:
                    return False
            elif name == "MEMOIZE":
                memo[len(memo)] = pushed[1]
            elif name in _PUT_OPS:
                memo[arg] = pushed[1]
            elif name in _GET_OPS:
                pushed = [pushed[1], memo.get(arg)]
            elif name in _STRING_OPS:
                pushed = [pushed[1], str(arg)]
            elif name not in ("FRAME", "PROTO"):
                pushed = [pushed[1], None]
    except Exception:  # noqa: BLE001 - malformed: measured, and its loading says how
        return False
    return False


def _measurements(jobs: list[tuple[int, bytes]], give_up: float, budget: float) -> list[tuple[str, tuple]]:
    """For each ``(kind, data)``: ``("", (memory, seconds))`` that rebuilding it here takes, measured in a child
    forked from this process (:func:`_measure`), or ``(why not, ())``."""
    me = os.getpid()
    children: list[int] = []  # unreaped
    read_fds: dict[int, int] = {}  # read end -> job index
    frames = _Frames(len(jobs))
    try:
        for i, (kind, data) in enumerate(jobs):
            read_fd, write_fd = os.pipe()
            read_fds[read_fd] = i
            try:
                pid = os.fork()
                if pid == 0:
                    for fd in read_fds:
                        os.close(fd)
                    _measure(kind, data, write_fd, me)
                children.append(pid)
            finally:
                os.close(write_fd)
        reading = dict(read_fds)
        while reading and (remaining := give_up - time.monotonic()) > 0:
            for fd in _protocol.readable(list(reading), remaining):
                if frames.read(reading[fd], fd) or frames[reading[fd]].done():
                    del reading[fd]
    finally:
        for pid in children:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    os.kill(pid, signal.SIGKILL)  # our unreaped child: its PID cannot be anyone else's yet
                    os.waitpid(pid, 0)
            except ChildProcessError:  # the notebook ignores SIGCHLD: reaped as it ended
                pass
        for fd in read_fds:
            os.close(fd)
    results: list[tuple[str, tuple]] = []
    for i in range(len(jobs)):
        frame = frames[i]
        body = frame.body()[1] if frame.done() and not frame.refused else b""
        if frame.kind == _HANDED and len(body) == _COST.size:
            results.append(("", _COST.unpack(body)))
        elif frame.kind == _FAILED and body:
            results.append((body.decode("utf-8", "replace"), ()))
        elif time.monotonic() >= give_up:
            results.append((f"rebuilding what the check handed back took longer than the {budget:.3g} s it had", ()))
        else:
            results.append(("what the check handed back could not be measured", ()))
    return results


def _measure(kind: int, data: bytes, write_fd: int, parent: int) -> None:
    """In a child forked from the kernel, which runs no code of the learner's: rebuild ``data`` as the kernel
    would, under the trial child's memory limit, and write the memory and time it took, or why it failed."""
    try:
        _contain.die_with_parent(parent)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _silence()
        gc.disable()
        if "torch" in sys.modules:  # a child forked after torch's thread pool ran hangs on its first parallel op
            sys.modules["torch"].set_num_threads(1)
        _limit_memory()
        kept = []
        before, started = _resident(), time.perf_counter()
        try:
            kept.append(plain_loads(data) if kind == _PLAIN_DATA else load_handed(data))
            body, kind = _COST.pack(max(_resident() - before, 0), time.perf_counter() - started), _HANDED
        except MemoryError:
            body, kind = f"unpickling it took more than {VALUE_MEMORY >> 20} MiB of memory".encode(), _FAILED
        except BaseException as error:  # noqa: B036 - what the trial child handed back is untrusted
            body, kind = f"what the check handed back cannot be read ({_failure(error)})"[:2000].encode(), _FAILED
        view = memoryview(_FRAME.pack(kind, len(body)) + body)
        while view:
            view = view[os.write(write_fd, view) :]
    finally:
        os._exit(0)


#: A pickle of at most this many bytes is unpickled here (when plain) without a look at its opcodes: it holds too
#: few distinct keys that hash alike to make building its sets and dicts slow (each such int takes 9 bytes).
SMALL_PICKLE = 4 << 10
#: Most keys of hashes a rank can choose alike (ints of 61 bits and more, floats in tuples or other built values,
#: Fractions and Decimals, and references to them) a pickle holding sets or dicts may have to be unpickled here:
#: inserting n keys that hash alike takes n**2 / 2 comparisons (20,000 ints hashing to 0, a 239 kB pickle, took
#: 10 s; attack10 a09); 1,024 take milliseconds. A pickle with more goes to the trial child, which has a deadline.
HASHED_KEYS_KEPT = 1024
_HASHED_OPS = frozenset(("EMPTY_SET", "ADDITEMS", "FROZENSET", "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS",
                         "GLOBAL", "STACK_GLOBAL", "INST", "OBJ"))  # fmt: skip
_BUILT_OPS = frozenset(("TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "FROZENSET", "REDUCE", "NEWOBJ", "NEWOBJ_EX"))
_LONG_OPS = frozenset(("LONG", "LONG1", "LONG4", "INT"))
_GET_OPS = frozenset(("GET", "BINGET", "LONG_BINGET"))
_STRING_OPS = frozenset(("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"))


def _direct(data: bytes) -> bool:
    """Whether a plain pickle may be unpickled here directly, in time bounded by its size. A larger one
    (:data:`INLINE_LIMIT`) only if it ends within :data:`OPS_LIMIT` opcodes: then it makes at most that many objects,
    and its size is in its long strings and byte runs (a tensor's storage: 44 opcodes for 4 MB), which take the
    memory they take in the pickle. Any one larger than :data:`SMALL_PICKLE` only if it holds no sets or dicts, or
    at most :data:`HASHED_KEYS_KEPT` keys whose hashes a rank can choose alike. The look at the opcodes takes about
    1.4 microseconds each (6 ms for a state dict of 200 tensors)."""
    if len(data) <= SMALL_PICKLE:
        return True
    ops_limit = OPS_LIMIT if len(data) > INLINE_LIMIT else None
    hashed = built = numbers = False
    chosen = floats = references = reduced = 0
    strings = ["", ""]
    try:
        for count, (opcode, arg, _) in enumerate(pickletools.genops(data)):
            name = opcode.name
            if name == "STOP":
                break
            if ops_limit is not None and count >= ops_limit:
                return False
            if name in _HASHED_OPS:
                hashed = True
                if name == "GLOBAL" or name == "STACK_GLOBAL":
                    module = str(arg).partition(" ")[0] if name == "GLOBAL" else strings[0]
                    numbers = numbers or module in ("fractions", "decimal", "_pydecimal")
            if name in _BUILT_OPS:
                built = True
                reduced += name == "REDUCE"
            elif name in _LONG_OPS:
                chosen += isinstance(arg, int) and abs(arg) >= 1 << 60  # distinct ints that hash alike are this large
            elif name == "BINFLOAT" or name == "FLOAT":
                floats += 1
            elif name in _GET_OPS:
                references += 1
            elif name in _STRING_OPS:
                strings = [strings[1], str(arg)]
        else:
            return False  # no STOP: malformed, the child's unpickling says how
    except Exception:  # noqa: BLE001 - malformed: the child's unpickling says how
        return False
    chosen += (floats if built else 0) + (reduced if numbers else 0)
    return not (hashed and chosen and chosen + references > HASHED_KEYS_KEPT)


def _too_costly(handed: tuple, taken: int, give_up: float) -> str:
    """Why a value a child rebuilt is not rebuilt here ("" if it may be): the memory and time it took there."""
    _, memory, seconds, _ = handed
    if memory > VALUE_MEMORY:
        return (
            f"it takes {memory / 2**20:.0f} MiB of memory once unpickled, over the {VALUE_MEMORY >> 20} MiB a returned "
            "value may take in the notebook; write large results to a file and return its path"
        )
    if taken + memory > RUN_MEMORY:
        return (
            f"with the values read before it, the run's values would take {(taken + memory) / 2**20:.0f} MiB of the "
            f"notebook's memory, over {RUN_MEMORY >> 20} MiB; write large results to a file and return its path"
        )
    left = give_up - time.monotonic()
    if seconds > left + LOAD_GRACE:
        return (
            f"unpickling it took {seconds:.2g} s, and {max(left, 0.0):.2g} s were left before the run's deadline: "
            "return less, or write it to a file and return its path"
        )
    return ""


# --- the restricted format a child hands values back in -------------------------------------------------
class NotRebuilt:
    """Stands for a returned value the notebook did not rebuild, because rebuilding it would run code of the
    value's own (its class customises its unpickling) or its class is not one the notebook has: its type,
    its ``repr`` as the checking child saw it, and why."""

    __slots__ = ("type_name", "text", "reason")

    def __init__(self, type_name: str, text: str, reason: str) -> None:
        self.type_name, self.text, self.reason = type_name, text, reason

    def __reduce__(self):
        return _not_rebuilt, (self.type_name, self.text, self.reason)

    def __repr__(self) -> str:
        try:
            return f"<{self.type_name} not rebuilt in the notebook ({self.reason}): {self.text}>"[:1000]
        except Exception:  # noqa: BLE001 - slots set to odd things by a crafted pickle
            return "<a value not rebuilt in the notebook>"


def _not_rebuilt(type_name, text, reason) -> NotRebuilt:
    return NotRebuilt(*(str(x)[:500] if isinstance(x, str) else "?" for x in (type_name, text, reason)))


class _Shell:
    """An object of a learner's class, its attributes set, before its ``__class__`` is (see :func:`_settle`)."""

    __hash__ = None  # never a dict key or set element: it would be hashed as a shell, not as its class

    def __setattr__(self, name, value):
        if name == "__class__":
            raise TypeError("a shell's class is set only once it is checked")
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"<an object not rebuilt in the notebook (its class is not found here); attributes: {list(vars(self))[:20]}>"


class _TupleShell(tuple):
    __slots__ = ()


_EXCEPTION_SHELLS: dict[type, type] = {}


def _exception_shell(base: type) -> type:
    """A shell class with the layout of the built-in exception ``base`` (a class of the learner's derived
    from ValueError can take the place only of an object laid out as a ValueError)."""
    if base not in _EXCEPTION_SHELLS:
        _EXCEPTION_SHELLS[base] = type(
            f"_{base.__name__}Shell", (base,), {"__hash__": None, "__setattr__": _Shell.__setattr__}
        )
    return _EXCEPTION_SHELLS[base]


def is_shell(value: object) -> bool:
    """Whether ``value`` is a shell whose class could not be set (it stands for an object not rebuilt)."""
    return isinstance(value, (_Shell, _TupleShell, *_EXCEPTION_SHELLS.values()))


def _builtin_base(cls: type) -> type | None:
    """The first built-in class in ``cls``'s MRO, read without calling anything of the class's."""
    for klass in type.__dict__["__mro__"].__get__(cls):
        if klass.__module__ == "builtins":
            return klass
    return None


#: numpy's own rebuilders (C code, or numpy's Python that calls it) and types.
_NUMPY = {
    (m, n)
    for m in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray", "numpy.core.numeric", "numpy._core.numeric")
    for n in ("_reconstruct", "scalar", "_frombuffer", "ndarray", "dtype")
}
_PLAIN |= {("collections", "defaultdict"), ("collections", "Counter")}
#: torch's rebuilders of nested, quantized and meta tensors (each one torch's own ``weights_only`` loader takes):
#: in what a trial child hands back only, never in a rank's pickle unpickled here directly, since a quantized one
#: allocates the size its pickle names before its storage is checked; the child has rebuilt it within its limits.
_TORCH_REBUILDERS = {
    ("torch._utils", n)
    for n in ("_rebuild_nested_tensor", "_rebuild_qtensor", "_rebuild_tensor_v3", "_rebuild_meta_tensor_no_storage")
}


class _HandedUnpickler(_PlainUnpickler):
    """Loads what a child handed back: plain data, tensors, numpy arrays, and shells (registered in
    ``self.shells``, settled after the load). Never a class or function of the learner's."""

    def __init__(self, file) -> None:
        super().__init__(file)
        self.shells: list[tuple[object, str, str]] = []

    def find_class(self, module: str, name: str):
        if (module, name) in _NUMPY or (module, name) in _TORCH_REBUILDERS:
            return super(_PlainUnpickler, self).find_class(module, name)
        if module == "torch" and type(_lookup_here(module, name)).__name__ == "qscheme":
            return _lookup_here(module, name)  # a quantized tensor's scheme, a constant of torch's
        if module == __name__:
            if name == "_not_rebuilt":
                return _not_rebuilt
            if name == "_instance":
                return self.instance
            if name == "_exception":
                return self.exception
            if name == "_tuple_instance":
                return self.tuple_instance
            if name == "_enum_member":
                return self.enum_member
        return super().find_class(module, name)

    def _register(self, shell, module, qualname):
        if not (isinstance(module, str) and isinstance(qualname, str)):
            raise pickle.UnpicklingError("a shell names its class by two strings")
        self.shells.append((shell, module, qualname))
        return shell

    def instance(self, module, qualname):
        return self._register(object.__new__(_Shell), module, qualname)

    def exception(self, module, qualname, base_name, args):
        import builtins

        base = vars(builtins).get(base_name) if isinstance(base_name, str) else None
        if not (isinstance(base, type) and issubclass(base, BaseException) and isinstance(args, tuple)):
            raise pickle.UnpicklingError("an exception shell needs a built-in exception and a tuple")
        shell = base.__new__(_exception_shell(base))
        shell.args = args
        return self._register(shell, module, qualname)

    def enum_member(self, module, qualname, name):
        """The member ``name`` of the enum class ``module.qualname``, looked up in its member map (no code of
        the class runs), or a stand-in."""
        import enum

        cls = _find_class_here(module, qualname) if isinstance(module, str) and isinstance(qualname, str) else None
        members = vars(cls).get("_member_map_") if isinstance(cls, enum.EnumMeta) else None
        member = members.get(name) if isinstance(members, dict) and isinstance(name, str) else None
        if isinstance(member, enum.Enum):
            return member
        return _not_rebuilt(f"{module}.{qualname}", repr(name), "the notebook has no such enum member")

    def tuple_instance(self, module, qualname, items):
        if not isinstance(items, tuple):
            raise pickle.UnpicklingError("a named tuple's items are a tuple")
        return self._register(_TupleShell(items), module, qualname)


def load_handed(data: bytes):
    """Load what a child handed back (see :class:`_HandedUnpickler`), then give each shell its class."""
    loader = _HandedUnpickler(io.BytesIO(data))
    value = loader.load()
    for shell, module, qualname in loader.shells:
        cls = _find_class_here(module, qualname)
        if cls is not None and _why_not_rebuilt(cls) is None:
            try:
                object.__setattr__(shell, "__class__", cls)  # no code of the class's runs
            except TypeError:  # another layout (a shell of the wrong kind): it stays a shell
                pass
    return value


def _lookup_here(module: str, qualname: str) -> object:
    """The object ``module.qualname`` if this process has it already (else None): never an import, never a
    module's ``__getattr__``, only dictionary look-ups."""
    found = sys.modules.get(module) if isinstance(module, str) and isinstance(qualname, str) else None
    for part in qualname.split(".") if found is not None else ():
        if found is None or part == "<locals>":
            return None
        try:
            namespace = object.__getattribute__(found, "__dict__")
        except AttributeError:
            return None
        found = namespace.get(part) if isinstance(namespace, (dict, types.MappingProxyType)) else None
    return found


def _find_class_here(module: str, qualname: str) -> type | None:
    """The class ``module.qualname`` if this process has it already (see :func:`_lookup_here`)."""
    found = _lookup_here(module, qualname)
    return found if isinstance(found, type) else None


#: What a class may define and still be rebuilt by setting an object's ``__class__``: nothing that changes
#: how its objects are pickled or made.
_CUSTOMISING = ("__reduce__", "__reduce_ex__", "__setstate__", "__getstate__", "__getnewargs__",
                "__getnewargs_ex__", "__new__", "__slots__")  # fmt: skip


#: What the interpreter calls on its own, with no call of the learner's, when an object is dropped: a class of the
#: learner's (or of a library: its code would run on attributes the rank chose) that defines one is not rebuilt
#: (a stand-in shows its ``repr``), so no code of the value's runs in the notebook when the Run is dropped.
_FINALIZERS = ("__del__",)


def _is_named_tuple(cls: type) -> bool:
    return (
        _builtin_base(cls) is tuple
        and isinstance(vars(cls).get("_fields"), tuple)
        and _NAMEDTUPLE_CODE is not None
        and getattr(vars(cls).get("__getnewargs__"), "__code__", None) is _NAMEDTUPLE_CODE
    )


def _namedtuple_code():
    import collections

    return collections.namedtuple("_", "a").__getnewargs__.__code__


_NAMEDTUPLE_CODE = _namedtuple_code()


#: Library classes whose pickling methods only copy the object's ``__dict__`` (torch.nn.Module's
#: ``__getstate__``/``__setstate__`` add defaults of old versions): their subclasses are rebuilt as shells too.
_DICT_PICKLING = {("torch.nn.modules.module", "Module")}


def _why_not_rebuilt(cls: type) -> str | None:
    """None if an object of ``cls`` can be rebuilt here as a shell whose class is set, else why not."""
    if type(cls) not in (type, abc.ABCMeta):
        return f"its class has the metaclass {type(cls).__name__}"
    base = _builtin_base(cls)
    named_tuple = _is_named_tuple(cls)
    if not (base is object or named_tuple or (isinstance(base, type) and issubclass(base, BaseException))):
        return f"its class derives from {getattr(base, '__name__', '?')}"
    for klass in type.__dict__["__mro__"].__get__(cls):
        if klass.__module__ == "builtins" or (klass.__module__, klass.__qualname__) in _DICT_PICKLING:
            continue
        names = vars(klass)
        if named_tuple and klass is cls:
            continue  # collections made its __new__ and __getnewargs__
        for name in _CUSTOMISING:
            if name in names and not (name == "__slots__" and not names[name]):
                return f"its class defines {name}"
        for name in _FINALIZERS:
            if name in names:
                return f"its class defines {name}, which would run in the notebook when the value is dropped"
    return None


# --- the throwaway children -----------------------------------------------------------------------------
_FRAME = struct.Struct(">BQ")  # kind, length of what follows
_HANDED, _PLAIN_DATA, _FAILED = 0, 1, 2
_COST = struct.Struct(">Qd")  # what a value took in the child: bytes of memory, seconds; first in a handed body
_STATUS = struct.Struct(">Ii")  # blob index, wait status: what the keeper reports of each trial child
#: How long the keeper may take, once told to stop, to kill what is left and report (milliseconds when well).
KEEPER_GRACE = 2.0


def _child(data: bytes, write_fd: int, parent: int) -> None:
    """In the forked child: unpickle, hand the value back re-pickled (or say it is an object, or why it
    failed), then ``os._exit`` with the value still alive (no ``__del__`` runs)."""
    kept = []
    try:
        _contain.die_with_parent(parent)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _silence()
        gc.disable()  # a collection would touch (and so copy) every object of the kernel's heap
        if "torch" in sys.modules:  # a child forked after torch's thread pool ran hangs on its first parallel op
            sys.modules["torch"].set_num_threads(1)
        known = set(sys.modules)  # what the kernel has imported (unpickling may import more, here only)
        _limit_memory()
        before, started = _resident(), time.perf_counter()
        try:
            try:
                value, kind = plain_loads(data), _PLAIN_DATA
            except _NeedsIsolation:
                value, kind = pickle.loads(data), _HANDED
            kept.append(value)
        except MemoryError:
            kind = _FAILED
            body = f"unpickling it took more than {VALUE_MEMORY >> 20} MiB of memory".encode()
        except BaseException as error:  # noqa: B036 - the value's failure, reported
            kind, body = _FAILED, _failure(error).encode("utf-8", "replace")
        else:
            cost = _COST.pack(max(_resident() - before, 0), time.perf_counter() - started)
            body = cost if kind == _PLAIN_DATA else cost + _hand_over(value, known, kept)
        view = memoryview(_FRAME.pack(kind, len(body)) + body)
        while view:
            view = view[os.write(write_fd, view) :]
    finally:
        os._exit(0)


def _resident() -> int:
    """This process's resident memory in bytes (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit_memory() -> None:
    """In a trial child: at most :data:`VALUE_MEMORY` more private memory than the kernel had (``RLIMIT_DATA``,
    Linux 4.7+), so a value that grows without end fails with ``MemoryError`` instead of taking the machine's."""
    try:
        import resource

        with open("/proc/self/status", "rb") as f:
            data = next(int(line.split()[1]) * 1024 for line in f if line.startswith(b"VmData:"))
        resource.setrlimit(resource.RLIMIT_DATA, (data + VALUE_MEMORY, resource.getrlimit(resource.RLIMIT_DATA)[1]))
    except (OSError, ValueError, StopIteration, ImportError):
        pass


def _silence() -> None:
    """Send the child's output nowhere: a kernel's fds 1 and 2 (and ipykernel's ``sys.stderr``) lead into the
    cell that is running, so a warning the value printed while unpickling here showed up there as an unexpected
    ``stderr`` output (nbval failed on it)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w")


def _hand_over(value: object, known: set[str], kept: list) -> bytes:
    """In the child: ``value`` in the restricted format :func:`load_handed` reads, checked by loading it
    here; if that fails, the whole value as a :class:`NotRebuilt`."""
    try:
        buffer = io.BytesIO()
        _HandingPickler(buffer, known).dump(value)
        body = buffer.getvalue()
        kept.append(load_handed(body))
        return body
    except BaseException as error:  # noqa: B036 - the value's own failure (a RecursionError, a broken __repr__)
        reason = f"it could not be handed over: {_failure(error)[:200]}"
        return pickle.dumps(_not_rebuilt(_type_name(type(value)), _child_repr(value), reason))


def _type_name(cls: type) -> str:
    try:
        return f"{cls.__module__}.{cls.__qualname__}"
    except Exception:  # noqa: BLE001
        return "?"


def _child_repr(value: object) -> str:
    import reprlib

    shown = reprlib.Repr()
    shown.maxlevel, shown.maxstring, shown.maxother = 3, 200, 200
    try:
        return shown.repr(value)[:400]
    except BaseException as error:  # noqa: B036 - its __repr__ fails: say so
        return f"<repr failed with {type(error).__name__}>"


def _kernel_takes(cls: type, known: set[str]) -> bool:
    """Whether the kernel's loader takes the exception class ``cls`` by name: a built-in one, or a torch one from
    a module the kernel has, whose calling runs no torch code (:func:`_called_cheaply`). Any other exception
    goes as a shell (its ``__init__`` never called in the kernel) or a stand-in."""
    module, qualname = getattr(cls, "__module__", ""), getattr(cls, "__qualname__", "")
    if module == "builtins":
        return True
    return (
        module.partition(".")[0] == "torch"
        and module in known
        and _find_class_here(module, qualname) is cls
        and _called_cheaply(cls)
    )


def _passes_as_is(obj: object, known: set[str]) -> bool:
    """Objects the kernel's loader rebuilds with no code of the learner's: plain data, built-in and torch
    exceptions and types (:func:`_kernel_takes`), tensors, numpy arrays, scalars and dtypes."""
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):  # saved by name: a name the
        key = (getattr(obj, "__module__", ""), getattr(obj, "__qualname__", ""))  # kernel's loader accepts
        if key in _PLAIN or key in _NUMPY or key in _TORCH_REBUILDERS or key == ("torch.storage", "_load_from_bytes"):
            return True
        return isinstance(obj, type) and issubclass(obj, BaseException) and _kernel_takes(obj, known)
    cls = type(obj)
    module = getattr(cls, "__module__", "")
    if (module, getattr(cls, "__qualname__", "")) in _VALUE_CLASSES:
        return True
    if module == "builtins" or module == "collections":
        return (module, cls.__name__) in _PLAIN or issubclass(cls, BaseException)
    top = module.partition(".")[0]
    if top == "torch":
        torch = sys.modules["torch"]
        return cls in (torch.Tensor, torch.nn.Parameter, torch.Size, torch.device, torch.dtype, torch.qscheme) or (
            isinstance(obj, (torch.UntypedStorage, torch.storage.TypedStorage))
            or (issubclass(cls, BaseException) and _kernel_takes(cls, known))
        )
    if top == "numpy":
        numpy = sys.modules["numpy"]
        return cls is numpy.ndarray or isinstance(obj, (numpy.generic, numpy.dtype))
    return False


class _HandingPickler(pickle.Pickler):
    """Writes the restricted format: what passes as is, shells for objects of the learner's classes the kernel
    has and can rebuild without their code, :class:`NotRebuilt` for the rest."""

    def __init__(self, file, known: set[str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.known = known

    def reducer_override(self, obj):
        if any(obj is c for c in _CONSTRUCTORS) or _passes_as_is(obj, self.known):
            return NotImplemented
        cls = type(obj)
        module, qualname = getattr(cls, "__module__", None), getattr(cls, "__qualname__", None)
        enum = sys.modules.get("enum")
        if enum is not None and isinstance(obj, enum.Enum) and _find_class_here(module, qualname) is cls:
            return _enum_member, (module, qualname, obj.name)  # found by name in the kernel: no code runs
        if isinstance(obj, type):
            why = "it is a class"
        elif module not in self.known or _find_class_here(module, qualname) is not cls:
            why = "its class is not one the notebook has"
        else:
            why = _why_not_rebuilt(cls)
        if why is None:
            if _is_named_tuple(cls):
                return _tuple_instance, (module, qualname, tuple(obj))
            state = object.__getattribute__(obj, "__dict__") if hasattr(obj, "__dict__") else {}
            if isinstance(obj, BaseException):
                base = _builtin_base(cls)
                return _exception, (module, qualname, base.__name__, tuple(obj.args)), dict(state) or None
            return _instance, (module, qualname), dict(state) or None
        return _not_rebuilt, (_type_name(cls), _child_repr(obj), why)


# In the handed-over pickle these are names only: the kernel's loader maps each to its own (find_class).
def _instance(*args):
    raise pickle.UnpicklingError("only load_handed rebuilds shells")


def _exception(*args):
    raise pickle.UnpicklingError("only load_handed rebuilds shells")


def _tuple_instance(*args):
    raise pickle.UnpicklingError("only load_handed rebuilds shells")


def _enum_member(*args):
    raise pickle.UnpicklingError("only load_handed finds enum members")


_CONSTRUCTORS = (_instance, _exception, _tuple_instance, _enum_member, _not_rebuilt)


def _keeper(blobs: list[bytes], write_fds: list[int], status_fd: int, control_fd: int, cgroup: str = "") -> None:
    """In the forked keeper, which runs no code of the learner's: join the check's ``cgroup`` (where one is
    made), fork one trial child per blob, be the child subreaper of everything they start (however it
    detaches: ``setsid``, double fork), report each child's exit status, and once every child has ended, or
    the kernel says stop (or dies: ``control_fd`` closes), kill every child and every process they started,
    then exit."""
    try:
        if cgroup:  # before any fork: all a child starts is born in it, and ends with it even if it kills us
            _contain.join_cgroup(cgroup)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a kernel that ignores SIGCHLD would have them auto-reaped
        gc.disable()
        _contain.become_subreaper()
        me = os.getpid()
        children: dict[int, int] = {}  # pid -> blob index
        for i, data in enumerate(blobs):
            pid = os.fork()
            if pid == 0:
                for j, fd in enumerate(write_fds):
                    if j != i:
                        os.close(fd)
                os.close(status_fd)
                os.close(control_fd)
                _child(data, write_fds[i], me)
            children[pid] = i
        for fd in write_fds:
            os.close(fd)

        def report(pid: int, status: int) -> None:
            os.write(status_fd, _STATUS.pack(children.pop(pid), status))

        while children:
            ready = _protocol.readable([control_fd], 0.005)
            if ready:
                break  # stop, or the kernel is gone
            while children:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid in children:
                    report(pid, status)
        for pid in list(children):
            os.kill(pid, signal.SIGKILL)  # our unreaped child: its PID cannot be anyone else's yet
            report(pid, os.waitpid(pid, 0)[1])
        _contain.kill_descendants(me)  # what they started: orphans are re-parented to this subreaper
    finally:
        os._exit(0)


def _trials(blobs: list[bytes], give_up: float, budget: float) -> list[tuple[str, tuple | None]]:
    """Unpickle each blob in its own throwaway child, all at once, until ``give_up``: per blob ``("", (kind,
    memory, seconds, what the child handed back))`` if it unpickled (kind ``_PLAIN_DATA``: plain data, nothing
    handed back: the blob itself may be unpickled here), else ``(why it failed, None)``. The children are forked
    by a keeper (:func:`_keeper`) that ends every process they start before it exits; where run cgroups are
    made, the keeper and all they start are in a cgroup of the check's own, killed when the check ends, so
    what a child started ends even if the value's code killed the keeper (attack30 a01). What a child writes
    is read only up to the length its frame says, and a frame longer than a value may be is refused at its
    header (:class:`_Frame`, attack30 a02)."""
    pipes = [os.pipe() for _ in blobs]
    status_r, status_w = os.pipe()
    control_r, control_w = os.pipe()
    cgroup = _check_cgroup()
    try:
        keeper = os.fork()
    except BaseException:
        for fd in (*(fd for pair in pipes for fd in pair), status_r, status_w, control_r, control_w):
            os.close(fd)
        _end_cgroup(cgroup)
        raise
    if keeper == 0:
        try:
            for read_fd, _ in pipes:
                os.close(read_fd)
            os.close(status_r)
            os.close(control_w)
        finally:
            _keeper(blobs, [w for _, w in pipes], status_w, control_r, cgroup)
    for _, write_fd in pipes:
        os.close(write_fd)
    os.close(status_w)
    os.close(control_r)
    index = {read_fd: i for i, (read_fd, _) in enumerate(pipes)}
    frames = _Frames(len(blobs))
    statuses: dict[int, int] = {}
    reports = bytearray()
    try:
        open_fds = set(index) | {status_r}
        while [i for i in range(len(blobs)) if not frames[i].done() and i not in statuses]:
            remaining = give_up - time.monotonic()
            if remaining <= 0 or not open_fds:
                break
            ready = _protocol.readable(list(open_fds), remaining)
            for fd in ready:
                if fd == status_r:
                    chunk = os.read(fd, 4096)
                    if not chunk:
                        open_fds.discard(fd)
                        continue
                    reports += chunk
                    _take_reports(reports, statuses, pipes, frames)
                    open_fds -= {read_fd for read_fd, i in index.items() if frames[i].done()}
                elif frames.read(index[fd], fd) or frames[index[fd]].done():
                    open_fds.discard(fd)  # at its end, or its frame is whole (or refused): nothing more is read
    finally:
        os.close(control_w)  # stop: the keeper kills what is left and reports it
        try:
            _end_keeper(keeper, status_r, reports, statuses, pipes, frames)
        finally:
            _end_cgroup(cgroup)  # what the children started, even if the keeper is gone (killed by a value)
    verdicts: list[tuple[str, tuple | None]] = []
    for i in range(len(blobs)):
        frame = frames[i]
        if frame.refused:
            verdicts.append((frame.refused, None))
            continue
        if frame.done():
            cost, body = frame.body(_COST.size if frame.kind in (_HANDED, _PLAIN_DATA) else 0)
            if frame.kind in (_HANDED, _PLAIN_DATA) and len(cost) == _COST.size:
                memory, seconds = _COST.unpack(cost)
                verdicts.append(("", (frame.kind, memory, seconds, body)))
            else:
                verdicts.append((body[:2000].decode("utf-8", "replace") or "unpickling it failed", None))
            continue
        status = statuses.get(i)
        if status is None:
            verdicts.append(("unpickling it did not finish", None))
        elif os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL and time.monotonic() >= give_up:
            verdicts.append((f"unpickling it took longer than {budget:.3g} s", None))
        elif os.WIFSIGNALED(status):
            verdicts.append((f"unpickling it killed the process ({signal_name(os.WTERMSIG(status))})", None))
        else:
            verdicts.append((f"unpickling it ended the process (exit code {os.waitstatus_to_exitcode(status)})", None))
    return verdicts


def _check_cgroup() -> str:
    """A cgroup of the check's own where run cgroups are made (``_contain.make_run_cgroup``), else "". Named as
    this kernel's runs' are, so that if this kernel dies before it ends it, the next kernel's first run does."""
    prefix = _protocol.run_dir_prefix(os.getpid(), _contain.start_time(os.getpid()) or 0)
    return _contain.make_run_cgroup(f"{prefix}check{os.urandom(6).hex()}")


def _end_cgroup(path: str) -> None:
    """Kill what the cgroup at ``path`` holds (one write to ``cgroup.kill``), then remove it: here if it is a
    single cgroup (one rmdir), else in the background (a value's code running as root may have made cgroups
    below it, which takes a while to walk)."""
    _contain.end_cgroup_here_or(path, _remove_cgroup_in_background)


def _remove_cgroup_in_background(path: str) -> None:
    import threading

    threading.Thread(target=_contain.remove_cgroup, args=(path,), daemon=True, name="barrierlab-check").start()


#: Most bytes a trial child's frame may say it holds: what it hands back of a value (which may take at most
#: :data:`VALUE_MEMORY` here) and its cost; a reason it failed is at most :data:`REASON_BYTES`.
FRAME_MOST = VALUE_MEMORY + _COST.size
REASON_BYTES = 64 << 10


class _Frame:
    """What one trial child writes, read here: its header (kind, length), then exactly that many bytes, never
    more. The child runs the value's code, which may write anything there (attack30 a02: a header saying
    1.5 GB, then 400 MB): a frame longer than a value may be (:data:`FRAME_MOST`), or than what is left of the
    run's :data:`RUN_MEMORY`, is refused at its header, before any of its body is read."""

    def __init__(self, frames: _Frames) -> None:
        self.frames = frames
        self.head = bytearray()
        self.kind: int | None = None
        self.length = 0
        self.chunks: list[bytes] = []
        self.got = 0
        self.refused = ""

    def done(self) -> bool:
        return bool(self.refused) or (self.kind is not None and self.got >= self.length)

    def wanted(self) -> int:
        return _FRAME.size - len(self.head) if self.kind is None else self.length - self.got

    def take(self, chunk: bytes) -> None:
        if self.kind is not None:
            self.chunks.append(chunk)
            self.got += len(chunk)
            return
        self.head += chunk
        if len(self.head) < _FRAME.size:
            return
        self.kind, self.length = _FRAME.unpack(self.head)
        most = REASON_BYTES if self.kind == _FAILED else FRAME_MOST
        if self.length > most:
            self.refused = (
                f"what the check handed back says it holds {self.length / 2**20:.0f} MiB, over the "
                f"{VALUE_MEMORY >> 20} MiB a returned value may take in the notebook; write large results to a "
                "file and return its path"
            )
        elif self.frames.held + self.length > RUN_MEMORY:
            self.refused = (
                f"with the values handed back before it, the check would hold "
                f"{(self.frames.held + self.length) / 2**20:.0f} MiB of the notebook's memory, over "
                f"{RUN_MEMORY >> 20} MiB; write large results to a file and return its path"
            )
        else:
            self.frames.held += self.length

    def body(self, skip: int = 0) -> tuple[bytes, bytes]:
        """The frame's first ``skip`` bytes, and the rest, joined once (the chunks are dropped here)."""
        chunks, self.chunks = self.chunks, []
        first = bytearray()
        while chunks and len(first) < skip:
            taken = chunks[0][: skip - len(first)]
            first += taken
            chunks[0] = chunks[0][len(taken) :]
            if not chunks[0]:
                chunks.pop(0)
        return bytes(first), b"".join(chunks)


class _Frames:
    """The :class:`_Frame` of each trial child, and how many bytes their accepted headers say they hold."""

    def __init__(self, count: int) -> None:
        self.held = 0
        self.frames = [_Frame(self) for _ in range(count)]

    def __getitem__(self, i: int) -> _Frame:
        return self.frames[i]

    def read(self, i: int, fd: int) -> bool:
        """Read once from ``fd`` into frame ``i`` (never past its end); True at the pipe's end of file."""
        frame = self.frames[i]
        if frame.done():
            return False
        chunk = os.read(fd, min(frame.wanted(), 1 << 20))
        if not chunk:
            return True
        frame.take(chunk)
        return False


def _take_reports(reports: bytearray, statuses: dict, pipes: list, frames: _Frames) -> None:
    """Take each whole (child, wait status) report the keeper sent off ``reports``; read what that child
    wrote before it ended."""
    while len(reports) >= _STATUS.size:
        i, status = _STATUS.unpack_from(reports)
        del reports[: _STATUS.size]
        if not 0 <= i < len(frames.frames):
            continue
        statuses[i] = status
        _drain(pipes[i][0], frames, i)


def _drain(fd: int, frames: _Frames, i: int) -> None:
    """Read what a child that has ended left in its pipe, up to its frame's end (at most a pipe's buffer when
    nothing else holds the pipe: the child could not end sooner)."""
    os.set_blocking(fd, False)
    try:
        while not frames[i].done() and not frames.read(i, fd):
            pass
    except BlockingIOError:
        pass


def _end_keeper(keeper: int, status_r: int, reports: bytearray, statuses: dict, pipes: list, frames: _Frames) -> None:
    """After the stop: the keeper's last reports, then the keeper itself, within :data:`KEEPER_GRACE`
    (SIGKILLed past it; its trial children die with it). Ctrl-C meanwhile is delivered once this is done."""
    interrupted = False
    give_up = time.monotonic() + KEEPER_GRACE
    try:
        while (remaining := give_up - time.monotonic()) > 0:
            try:
                ready = _protocol.readable([status_r], remaining)
            except KeyboardInterrupt:
                interrupted = True
                continue
            if not ready:
                break
            chunk = os.read(status_r, 4096)
            if not chunk:
                break
            reports += chunk
            _take_reports(reports, statuses, pipes, frames)
        try:
            while os.waitpid(keeper, os.WNOHANG)[0] == 0:
                if time.monotonic() >= give_up:
                    os.kill(keeper, signal.SIGKILL)  # our unreaped child: its PID cannot be anyone else's yet
                    os.waitpid(keeper, 0)
                    break
                time.sleep(0.002)
        except ChildProcessError:  # the notebook ignores SIGCHLD: the keeper was reaped as it ended (attack9 a12)
            pass
    finally:
        os.close(status_r)
        for read_fd, _ in pipes:
            os.close(read_fd)
    if interrupted:
        raise KeyboardInterrupt
