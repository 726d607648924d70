"""Unpickling what the ranks returned, without letting it hurt the kernel or outlast the run's deadline.

A rank runs the learner's code, so the pickles of its return value and exception are untrusted: their
unpickling may run any code (``__reduce__``), which may exit the process, crash it, hang, or take long.

* Plain data (numbers, strings, containers of them, built-in and torch exceptions, tensors, whose storage
  goes through torch's ``weights_only`` loader) is unpickled directly: no code of the learner's runs.
* Anything else is unpickled in a throwaway child forked from this process, one per distinct value, all at once, within
  what remains of the run's deadline (``within``). The child keeps what it unpickled alive until it exits with
  ``os._exit`` (a ``__del__`` that hangs costs nothing), and hands the value back pickled again: if that
  pickle is plain data, it is what this process loads (safely, no second run of the learner's code); only a
  value that stays an object of the learner's classes is unpickled a second time here, bounded by a timer
  (in the main thread) by the time left.
* The children die with this process (``PR_SET_PDEATHSIG``), ignore SIGINT, and are killed and reaped on every
  way out of the check, so Ctrl-C ends it at once.

What it does not protect against: memory exhaustion by a value too large for the kernel, a malformed tensor
storage that crashes torch's own loader, and (outside the main thread, where no timer can interrupt it) a
value whose second unpickling here is slower than in the child.
"""

from __future__ import annotations

import gc
import io
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time

from barrierlab import _contain
from barrierlab._protocol import signal_name

#: How long checking the returned values may take when no deadline is given (seconds).
UNPICKLE_TIMEOUT = 10.0
#: Most time given past ``within`` to unpickle here, a second time, values the children unpickled in time.
HERE_AFTER_DEADLINE = 0.5


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


def _load_storage_weights_only(data: bytes):
    """What ``torch.storage._load_from_bytes`` does for a pickled tensor's storage, but with torch's
    restricted (``weights_only``) unpickler, which refuses anything but tensors and plain data."""
    import torch

    return torch.load(io.BytesIO(data), weights_only=True)


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _PLAIN:
            return super().find_class(module, name)
        if (module, name) == ("torch.storage", "_load_from_bytes"):
            return _load_storage_weights_only
        if module == "builtins" or module == "torch" or module.startswith("torch."):
            found = super().find_class(module, name)
            if isinstance(found, type) and issubclass(found, BaseException):
                return found
            if module == "torch" and type(found).__name__ == "dtype":
                return found
        raise _NeedsIsolation(f"{module}.{name}")


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
        try:
            results[i] = (True, plain_loads(data))
        except _NeedsIsolation:
            suspect.append(i)
        except Exception as error:
            results[i] = (False, _failure(error))
    if suspect:
        started = time.monotonic()
        distinct = list(dict.fromkeys(blobs[i] for i in suspect))  # every rank returned the same: one child
        trials = _trials(distinct, give_up, budget) if hasattr(os, "fork") else None
        took = time.monotonic() - started
        verdicts = dict(zip(distinct, trials)) if trials else {}
        # the second unpickling of the learner's objects here shares one bound (one value per rank must not
        # multiply it): what is left, or else twice what the children took, at most HERE_AFTER_DEADLINE
        here_by = max(give_up, time.monotonic() + min(2 * took + 0.1, HERE_AFTER_DEADLINE))
        for i in suspect:
            verdict, handed = verdicts.get(blobs[i], ("", None))
            if verdict:
                results[i] = (False, verdict)
                continue
            if handed is not None:
                try:
                    results[i] = (True, plain_loads(handed))
                    continue
                except Exception:  # noqa: BLE001 - not plain after all: unpickled here, bounded
                    pass
            left = here_by - time.monotonic()
            results[i] = (
                _bounded_loads(blobs[i], left)
                if left > 0
                else (False, "no time was left to unpickle it in the notebook (another value used it up)")
            )
    return results  # type: ignore[return-value]


class _TookTooLong(BaseException):
    pass


def _bounded_loads(data: bytes, seconds: float) -> tuple[bool, object]:
    """``pickle.loads`` in this process, interrupted after ``seconds`` by a timer when in the main thread."""
    timed = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")

    def expire(signum, frame):
        raise _TookTooLong

    previous = None
    try:
        if timed:
            previous = signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
        return True, pickle.loads(data)
    except _TookTooLong:
        return False, f"unpickling it in the notebook took longer than {seconds:.3g} s"
    except BaseException as error:  # noqa: B036 - what unpickling raised is the value's failure...
        if isinstance(error, KeyboardInterrupt):
            raise  # ...but Ctrl-C is the learner's
        return False, _failure(error)
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


# --- the throwaway children -----------------------------------------------------------------------------
_FRAME = struct.Struct(">BQ")  # kind, length of what follows
_PLAIN_VALUE, _OBJECT, _FAILED = 0, 1, 2


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
        try:
            value = pickle.loads(data)
            kept.append(value)
        except BaseException as error:  # noqa: B036 - the value's failure, reported
            kind, body = _FAILED, _failure(error).encode("utf-8", "replace")
        else:
            try:
                body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
                plain_loads(body)
                kind = _PLAIN_VALUE
            except BaseException:  # noqa: B036 - not plain: the parent unpickles the original itself
                kind, body = _OBJECT, b""
        view = memoryview(_FRAME.pack(kind, len(body)) + body)
        while view:
            view = view[os.write(write_fd, view) :]
    finally:
        os._exit(0)


def _silence() -> None:
    """Send the child's output nowhere: a kernel's fds 1 and 2 (and ipykernel's ``sys.stderr``) lead into the
    cell that is running, so a warning the value printed while unpickling here showed up there as an unexpected
    ``stderr`` output (nbval failed on it). The kernel's own unpickle, if it comes to that, prints as usual."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w")


def _trials(blobs: list[bytes], give_up: float, budget: float) -> list[tuple[str, bytes | None]]:
    """Unpickle each blob in its own forked child, all at once, until ``give_up``: per blob ``("", plain
    pickle of the value or None)`` if it unpickled, else ``(why it failed, None)``."""
    parent = os.getpid()
    children: dict[int, tuple[int, int]] = {}  # read fd -> (blob index, pid)
    received: dict[int, bytearray] = {}
    statuses: dict[int, int] = {}
    try:
        for i, data in enumerate(blobs):
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_fd)
                _child(data, write_fd, parent)
            os.close(write_fd)
            children[read_fd] = (i, pid)
            received[i] = bytearray()
        open_fds = set(children)
        while open_fds:
            remaining = give_up - time.monotonic()
            if remaining <= 0:
                break
            ready, _, _ = select.select(list(open_fds), [], [], remaining)
            for fd in ready:
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    received[children[fd][0]] += chunk
                else:
                    open_fds.discard(fd)
    finally:
        for fd, (i, pid) in children.items():
            os.close(fd)
            try:
                os.kill(pid, signal.SIGKILL)  # our unreaped child: its PID cannot be anyone else's yet
            except ProcessLookupError:
                pass
            statuses[i] = os.waitpid(pid, 0)[1]
    verdicts: list[tuple[str, bytes | None]] = []
    for i in range(len(blobs)):
        data = bytes(received[i])
        if len(data) >= _FRAME.size:
            kind, length = _FRAME.unpack_from(data)
            body = data[_FRAME.size : _FRAME.size + length]
            if len(body) == length:
                if kind == _PLAIN_VALUE:
                    verdicts.append(("", body))
                elif kind == _OBJECT:
                    verdicts.append(("", None))
                else:
                    verdicts.append((body.decode("utf-8", "replace") or "unpickling it failed", None))
                continue
        status = statuses[i]
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL and time.monotonic() >= give_up:
            verdicts.append((f"unpickling it took longer than {budget:.3g} s", None))
        elif os.WIFSIGNALED(status):
            verdicts.append((f"unpickling it killed the process ({signal_name(os.WTERMSIG(status))})", None))
        else:
            verdicts.append((f"unpickling it ended the process (exit code {os.waitstatus_to_exitcode(status)})", None))
    return verdicts
