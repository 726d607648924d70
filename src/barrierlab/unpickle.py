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
* The children are forked by a *keeper* (forked from this process, running none of the learner's code), a
  child subreaper: whatever a child starts, however it detaches (``setsid``, a double fork, a shell's ``&``),
  stays the keeper's descendant, and the keeper kills all of it when the children have ended, when this
  process says stop, or when this process dies (its control pipe closes). The children die with the keeper
  (``PR_SET_PDEATHSIG``), ignore SIGINT, and are killed and reaped on every way out of the check, so Ctrl-C
  ends it at once.

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


def _keeper(blobs: list[bytes], write_fds: list[int], status_fd: int, control_fd: int) -> None:
    """In the forked keeper, which runs no code of the learner's: fork one trial child per blob, be the child
    subreaper of everything they start (however it detaches: ``setsid``, double fork), report each child's
    exit status, and once every child has ended, or the kernel says stop (or dies: ``control_fd`` closes),
    kill every child and every process they started, then exit."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
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
            ready, _, _ = select.select([control_fd], [], [], 0.005)
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


def _trials(blobs: list[bytes], give_up: float, budget: float) -> list[tuple[str, bytes | None]]:
    """Unpickle each blob in its own throwaway child, all at once, until ``give_up``: per blob ``("", what the
    child handed back)`` if it unpickled, else ``(why it failed, None)``. The children are forked by a keeper
    (:func:`_keeper`) that ends every process they start before it exits."""
    pipes = [os.pipe() for _ in blobs]
    status_r, status_w = os.pipe()
    control_r, control_w = os.pipe()
    keeper = os.fork()
    if keeper == 0:
        try:
            for read_fd, _ in pipes:
                os.close(read_fd)
            os.close(status_r)
            os.close(control_w)
        finally:
            _keeper(blobs, [w for _, w in pipes], status_w, control_r)
    for _, write_fd in pipes:
        os.close(write_fd)
    os.close(status_w)
    os.close(control_r)
    index = {read_fd: i for i, (read_fd, _) in enumerate(pipes)}
    received: dict[int, bytearray] = {i: bytearray() for i in range(len(blobs))}
    statuses: dict[int, int] = {}
    reports = bytearray()
    try:
        open_fds = set(index) | {status_r}
        while (pending := [i for i in range(len(blobs)) if not _complete(received[i]) and i not in statuses]) or (
            status_r in open_fds and len(statuses) < len(blobs)
        ):
            if not pending:
                break
            remaining = give_up - time.monotonic()
            if remaining <= 0:
                break
            ready, _, _ = select.select(list(open_fds), [], [], remaining)
            for fd in ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    open_fds.discard(fd)
                elif fd == status_r:
                    reports += chunk
                    while len(reports) >= _STATUS.size:
                        i, status = _STATUS.unpack_from(reports)
                        del reports[: _STATUS.size]
                        statuses[i] = status
                        _drain(pipes[i][0], received[i])
                else:
                    received[index[fd]] += chunk
    finally:
        os.close(control_w)  # stop: the keeper kills what is left and reports it
        _end_keeper(keeper, status_r, reports, statuses, pipes, received)
    verdicts: list[tuple[str, bytes | None]] = []
    for i in range(len(blobs)):
        data = bytes(received[i])
        if _complete(data):
            kind, length = _FRAME.unpack_from(data)
            body = data[_FRAME.size : _FRAME.size + length]
            if kind == _PLAIN_VALUE:
                verdicts.append(("", body))
            elif kind == _OBJECT:
                verdicts.append(("", None))
            else:
                verdicts.append((body.decode("utf-8", "replace") or "unpickling it failed", None))
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


def _complete(data: bytes | bytearray) -> bool:
    """Whether ``data`` holds a whole frame."""
    return len(data) >= _FRAME.size and len(data) >= _FRAME.size + _FRAME.unpack_from(data)[1]


def _drain(fd: int, into: bytearray) -> None:
    """Read what a child that has ended left in its pipe (at most a pipe's buffer: it could not end sooner)."""
    os.set_blocking(fd, False)
    try:
        while chunk := os.read(fd, 1 << 20):
            into += chunk
    except BlockingIOError:
        pass


def _end_keeper(keeper: int, status_r: int, reports: bytearray, statuses: dict, pipes: list, received: dict) -> None:
    """After the stop: the keeper's last reports, then the keeper itself, within :data:`KEEPER_GRACE`
    (SIGKILLed past it; its trial children die with it). Ctrl-C meanwhile is delivered once this is done."""
    interrupted = False
    give_up = time.monotonic() + KEEPER_GRACE
    try:
        while (remaining := give_up - time.monotonic()) > 0:
            try:
                ready, _, _ = select.select([status_r], [], [], remaining)
            except KeyboardInterrupt:
                interrupted = True
                continue
            if not ready:
                break
            chunk = os.read(status_r, 4096)
            if not chunk:
                break
            reports += chunk
            while len(reports) >= _STATUS.size:
                i, status = _STATUS.unpack_from(reports)
                del reports[: _STATUS.size]
                statuses[i] = status
                _drain(pipes[i][0], received[i])
        while os.waitpid(keeper, os.WNOHANG)[0] == 0:
            if time.monotonic() >= give_up:
                os.kill(keeper, signal.SIGKILL)  # our unreaped child: its PID cannot be anyone else's yet
                os.waitpid(keeper, 0)
                break
            time.sleep(0.002)
    finally:
        os.close(status_r)
        for read_fd, _ in pipes:
            os.close(read_fd)
    if interrupted:
        raise KeyboardInterrupt
