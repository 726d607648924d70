"""Start a gloo process group of N local ranks, run a function on each, and always end within a deadline.

``run(fn, world_size)`` is the one verb; it returns a :class:`~barrierlab.result.Run`.  Ranks are forked
by a warm process that has torch imported already (see ``_warm.py``), so a launch costs tens of
milliseconds instead of seconds, and forking never happens from the multi-threaded kernel itself.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import inspect
import math
import numbers
import operator
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import BinaryIO

import cloudpickle

from barrierlab import _contain, _files, _payload, _protocol, _segments, _warmstart
from barrierlab._protocol import (
    GONE_DIR_PREFIX,
    PAYLOAD_FILE,
    RUN_DIR_PREFIX,
    STACK_SIGNAL,
    Exited,
    Launch,
    LaunchFailed,
    Message,
    Outcome,
    Preloaded,
    PreloadNow,
    ProtocolError,
    Quit,
    RankFiles,
    Ready,
    RunOptions,
    RunSpec,
    SignalRanks,
    Started,
    Status,
    Swept,
    gone_dir_prefix,
    receive,
    run_dir_owner,
    run_dir_prefix,
    send,
    signal_name,
    write_new_file,
)
from barrierlab.collect import collect, event_heads
from barrierlab.live import LiveView, ended_ranks
from barrierlab.live import choose as choose_view
from barrierlab.result import Run
from barrierlab.sites import CodeIndex, Site

#: torch's own timeout for every collective in the group (torch's default is 30 minutes).
DEFAULT_TIMEOUT = 5.0
#: Extra wall time the launcher allows beyond the group timeout before it stops the ranks.
DEFAULT_DEADLINE_MARGIN = 5.0
#: How many ranks ``run`` (and ``barrierlab run``) starts when not told.
DEFAULT_WORLD_SIZE = 4
#: Largest group ``run`` starts: beyond it timelines stop being readable and a 2-core laptop thrashes.
MAX_WORLD_SIZE = 16
#: How long stuck ranks get to write their Python stacks before they are killed.
STACK_GRACE = 0.3
#: How long a rank that has reported its outcome may take to exit (torch's teardown: destroying the
#: function's DDP model and process group) before it is ended: the run does not wait for its deadline.
TEARDOWN_GRACE = 5.0
#: How long the first launch may wait for the warm process to import torch.
START_TIMEOUT = 120.0
#: Smallest ``timeout`` and ``deadline`` accepted, in seconds: torch counts its timeouts in whole milliseconds,
#: so a shorter one becomes 0 ms and fails inside torch (DistNetworkError) instead of meaning anything.
MIN_SECONDS = 0.001
#: Time the kernel gives itself to check the values the ranks returned when the deadline has (nearly) passed.
UNPICKLE_FLOOR = 0.5
#: Time the kernel gives itself to read the values the ranks returned when the deadline has passed (a value of
#: at most ``_protocol.PICKLE_ALWAYS_READ`` bytes is read anyway; a larger one not read by then fails its rank).
VALUE_READ_GRACE = 0.2
#: Shortest timeout of the store the kernel hosts (its own client connects to it as it starts: with a 1 ms
#: deadline as its timeout, that failed inside torch with DistNetworkError).
STORE_TIMEOUT_FLOOR = 10.0
#: Largest ``timeout`` accepted, in seconds (an hour: a lab run that needs longer is a bug to find).
MAX_TIMEOUT = 3600.0
#: Largest ``deadline`` accepted, in seconds: the largest timeout plus the default margin.
MAX_DEADLINE = MAX_TIMEOUT + DEFAULT_DEADLINE_MARGIN
#: Most torch intra-op threads per rank.
MAX_THREADS = 64
#: A call pickled larger than this is written once to a file in the run's folder instead of being sent
#: through the pipe (each rank reads it for itself).
PAYLOAD_INLINE = 256 * 1024
#: How long a warm process that has finished preloading may take to fork a run's ranks (milliseconds when well).
START_ANSWER_TIMEOUT = 5.0
#: How long the warm process may take to confirm that ranks (and what they started) are gone, once the
#: kernel sees them dead, before it counts as unresponsive and is replaced.
CONFIRM_TIMEOUT = 0.5
#: The same while the warm process is still importing the lessons' modules (it imports one at a time between
#: requests, torch._dynamo taking seconds, and answers only in between).
PRELOADING_CONFIRM_TIMEOUT = 30.0
#: How much longer the warm process may take to confirm the sweep once every rank's exit is confirmed: it is
#: then killing what the ranks started, and hundreds of forked processes take a second to die (attack28 a14: a
#: rank forking every 10 ms; given only CONFIRM_TIMEOUT, the warm process was replaced after every such run, and
#: the next call paid for a new one). Its sweep is bounded (``_warm.WarmProcess.sweep``: two waits of 1 s).
SWEEP_CONFIRM_EXTRA = 2.5
#: While the kernel waits for the ranks it reads the start of their events files (what it reads then is not
#: read after the deadline), at most this many lines of each per look, and never in the last
#: ``HEAD_READ_MARGIN`` seconds before the deadline, nor in the last two of its longest looks so far (on a
#: loaded machine a look takes 10-20 times its CPU time: 6 ranks' 1,000 lines, 40 ms of CPU).
HEAD_LINES_PER_LOOK = 1000
HEAD_READ_MARGIN = 0.3
#: How long the rest of a message may take to arrive once its first byte has: the warm process writes each
#: message in one write (under 2 KiB, atomic on a pipe), so a frame still incomplete then was written by
#: another process (a rank can open the pipe through /proc/<pid>/fd): the warm process is replaced.
FRAME_TIMEOUT = 0.5


class LaunchError(RuntimeError):
    """The ranks could not be started (the warm process failed or died)."""


class WarmProcessLost(LaunchError):
    """The warm process exited (or was killed) while the kernel was talking to it."""

    #: Why, as the learner is told after a run it ended (``_RunningGroup.lost_warm_note``).
    why = "not by barrierlab (a rank's code, or another program, signalled it; Linux does not say which)"

    def __init__(self, code: int) -> None:
        self.code = code
        how = f"was killed ({signal_name(-code)})" if code < 0 else f"exited (code {code})"
        self.how = how
        super().__init__(f"the warm process that starts ranks {how}; the next run starts a new one")


class RanksNotForked(LaunchError):
    """The warm process could not fork a run's ranks (:class:`~barrierlab._protocol.LaunchFailed`); none runs."""


class WarmLostBeforeLaunch(RanksNotForked):
    """The warm process was gone when a run was handed to it (killed between runs: the OOM killer, a learner's
    ``kill``, a rank of the run before); none of this run's ranks ran. The run is launched once more, on a
    fresh warm process."""


class _SendFailed(LaunchError):
    """The launch could not be written to the warm process (its end of the pipe is closed: it died)."""


class WarmPipeCorrupted(WarmProcessLost):
    """Bytes that are not a message came through the warm process's pipe (another process, a rank's code,
    wrote into it through /proc/<pid>/fd); the kernel stopped the warm process, as if it had died."""

    def __init__(self, code: int, error: ProtocolError) -> None:
        super().__init__(code)
        self.how = "was stopped by barrierlab"
        self.why = (
            f"because its pipe to the kernel carried bytes that are not a barrierlab message ({error}): another "
            "process wrote into it (a rank's code can open it through /proc/<pid>/fd)"
        )
        self.args = (
            f"the warm process's pipe carried bytes that are not a message ({error}); it was stopped "
            "and the next run starts a new one",
        )


@contextlib.contextmanager
def _interrupt_deferred():
    """In the main thread: a SIGINT (Ctrl-C, Jupyter's interrupt) that arrives inside the block raises
    KeyboardInterrupt only when the block is done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    interrupted = []
    try:
        previous = signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))
    except (ValueError, TypeError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted:
        if callable(previous):
            previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt


class _WarmProcess:
    """The handle on the warm process: a child of this kernel that forks ranks on request."""

    def __init__(self) -> None:
        self.process = _warmstart.adopt() or _warmstart.start()
        self.to_fd = self.process.stdin.fileno()
        self.from_fd = self.process.stdout.fileno()
        self.pid: int | None = None
        self.preloaded = False
        #: The cgroup of the next run, made ahead and named in the last Launch: the warm process puts the ranks
        #: it pools into it as it forks them, between runs, so that a launch need not move them (a move costs
        #: milliseconds). "" where no run cgroups are made or none is made yet.
        self.next_cgroup = ""
        #: The next run's store, made ahead and named in the last Launch: the ranks the warm process pools
        #: connect to it while they wait (a connection costs each rank milliseconds at the launch).
        self.next_store: _LoopbackStore | None = None

    def take_next_cgroup(self) -> str:
        cgroup, self.next_cgroup = self.next_cgroup, ""
        return cgroup

    def take_next_store(self) -> _LoopbackStore | None:
        store, self.next_store = self.next_store, None
        return store

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: Message) -> None:
        try:
            with _interrupt_deferred():  # half a message would leave the pipe out of step
                send(self.to_fd, message)
        except (BrokenPipeError, OSError) as error:
            raise LaunchError(f"the warm process (pid {self.process.pid}) is gone: {error}") from None

    def receive(self, timeout: float) -> Message | None:
        """The next message, None after ``timeout`` seconds; LaunchError if the warm process died."""
        if not _protocol.readable([self.from_fd], timeout):
            return None
        try:
            with _interrupt_deferred():  # half a message would leave the pipe out of step
                message = receive(self.from_fd, within=FRAME_TIMEOUT)
        except ProtocolError as error:  # never believe this pipe again: stop its warm process (and its ranks)
            self.process.kill()  # our own unreaped child: its PID cannot have been reused
            raise WarmPipeCorrupted(self.process.wait(), error) from None
        if message is None:
            try:
                code = self.process.wait(timeout=CONFIRM_TIMEOUT)
            except subprocess.TimeoutExpired:  # it closed its pipe but lives on: it is of no use any more
                self.process.kill()
                code = self.process.wait()
            raise WarmProcessLost(code)
        if isinstance(message, Preloaded):
            self.preloaded = True
        return message

    def wait_ready(self) -> None:
        if self.pid is not None:
            return
        give_up = time.monotonic() + START_TIMEOUT
        while (remaining := give_up - time.monotonic()) > 0:
            message = self.receive(remaining)
            if isinstance(message, Ready):
                self.pid = message.pid
                return
        raise LaunchError(f"the warm process did not import torch within {START_TIMEOUT:.0f} s")

    def wait_preloaded(self) -> None:
        """Until the warm process has imported the modules the lessons use (it does so between launches, once the
        kernel has been idle a moment: it is told not to wait, since the kernel now waits for it)."""
        self.wait_ready()
        if not self.preloaded:
            self.send(PreloadNow())
        give_up = time.monotonic() + START_TIMEOUT
        while not self.preloaded and (remaining := give_up - time.monotonic()) > 0:
            self.receive(remaining)
        if not self.preloaded:
            raise LaunchError(f"the warm process did not finish preloading within {START_TIMEOUT:.0f} s")

    def close(self) -> None:
        if self.alive():
            try:
                send(self.to_fd, Quit())
                self.process.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()
        _end_cgroup(self.take_next_cgroup())  # it held only pooled ranks, dead with this process
        store = self.take_next_store()
        if store is not None:
            store.close()


_lock = threading.RLock()
_warm: _WarmProcess | None = None


def warm_up(wait: bool = False) -> None:
    """Start the warm process now (it imports torch, then the modules the lessons use, in the background);
    ``wait=True`` blocks until all of that is done, so that a DDP or DCP demo launches at full speed."""
    global _warm
    if not isinstance(wait, bool):
        raise TypeError(f"wait must be True or False, not {wait!r}")
    with _lock:
        if _warm is None or not _warm.alive():
            if _warm is None:
                remove_stale_run_dirs()
            else:
                _warm.close()
            _warm = _WarmProcess()
        if wait:
            _warm.wait_preloaded()


def shutdown() -> None:
    """Stop the warm process (and with it any rank still alive). The next ``run`` starts it again."""
    global _warm
    with _lock:
        if _warm is not None:
            _warm.close()
            _warm = None
        _stores.close()


atexit.register(shutdown)


def _describe(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a value whose __repr__ raises is still described by its type
        text = "(its repr() failed)"
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _check_count(name: str, value: object, what: str) -> int:
    """``value`` as a plain int, or a ``TypeError`` naming ``name`` (also for an Integral whose ``__index__``
    raises: its comparisons would raise later, from inside the launcher)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number of {what} (int), got {_describe(value)}")
    try:
        return operator.index(value)
    except Exception as error:  # noqa: BLE001 - the learner's Integral failed: say which parameter
        raise TypeError(
            f"{name} must be a whole number of {what} (int); {_describe(value)} could not be read as one "
            f"({type(error).__name__})"
        ) from None


def _check_seconds(name: str, value: object, largest: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds (int or float), got {_describe(value)}")
    try:
        value = float(value)
    except Exception as error:  # noqa: BLE001 - a numbers.Real whose __float__ raises
        raise TypeError(
            f"{name} must be a number of seconds (int or float), got {_describe(value)}, which float() refuses "
            f"({type(error).__name__})"
        ) from None
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    if value < MIN_SECONDS:
        raise ValueError(
            f"{name} must be at least {MIN_SECONDS:g} seconds (barrierlab.launch.MIN_SECONDS: torch counts "
            f"timeouts in whole milliseconds, so a shorter one becomes 0), got {value:g}"
        )
    if value > largest:
        raise ValueError(
            f"{name} must be at most {largest:g} seconds (barrierlab.launch.MAX_{name.upper()}), "
            f"got {value:g}: a lab run that needs longer has a bug to find first"
        )
    return value


def _check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {_describe(value)}")
    return value


def _check_function(fn: object) -> None:
    if not callable(fn):
        raise TypeError(
            f"barrierlab.run needs a function to run on every rank (fn), got {_describe(fn)}. "
            "Pass the function itself: run(train, world_size=4), not run(train(), ...)."
        )
    hops: list[str] = []
    for layer in _what_it_calls(fn, hops):
        # an object whose __call__ is async or a generator (functools.partial of one is unwrapped by inspect itself)
        call = layer if inspect.isroutine(layer) or inspect.isclass(layer) else type(layer).__call__
        if any(inspect.isasyncgenfunction(f) or inspect.iscoroutinefunction(f) for f in (layer, call)):
            kind, made, hint = "async", "a coroutine", "def fn(): return asyncio.run(your_async_fn())"
        elif inspect.isgeneratorfunction(layer) or inspect.isgeneratorfunction(call):
            kind, made, hint = "generator", "a generator", "def fn(): return list(your_fn())"
        else:
            continue
        if layer is fn:
            raise TypeError(
                f"fn must be an ordinary function, got the {kind} function {_name_of(fn)!r}: calling it only "
                f"creates {made}, so its body would never run. Wrap it: {hint}"
            )
        runs_it = (
            " (if your wrapper does run it to the end, pass a plain function that calls the wrapper: "
            "lambda: your_wrapped_fn())"
            if any(hop.startswith("a functools.wraps") for hop in hops)
            else ""
        )
        raise TypeError(
            f"fn must be an ordinary function, got {_name_of(fn)!r}, which hands its call on to the {kind} "
            f"function {_name_of(layer)!r} ({', then '.join(hops)}) and gives back what that returns: calling it "
            f"only creates {made}, so its body would never run. Wrap it: {hint}{runs_it}"
        )


def _name_of(fn: object) -> str:
    try:
        name = getattr(fn, "__qualname__", None)
    except Exception:  # noqa: BLE001 - a learner's __getattr__ that raises: the type names it
        name = None
    return name if isinstance(name, str) else type(fn).__name__


#: Layers of wrapping followed from ``fn`` to what it calls, at most (a ``__wrapped__`` chain may be a cycle).
_MAX_WRAPPING = 64
#: Names a wrapper's own code refers to when it may run what it wraps to the end itself (``asyncio.run``, a loop's
#: ``run_until_complete``, ``list(gen)``, ``next(...)``): such a wrapper is not a pass-through, and is not refused.
_DRIVERS = frozenset(
    {
        "run",
        "run_until_complete",
        "run_coroutine_threadsafe",
        "run_sync",
        "result",
        "send",
        "throw",
        "gather",
        "wait",
        "wait_for",
        "ensure_future",
        "create_task",
        "list",
        "tuple",
        "set",
        "frozenset",
        "dict",
        "sorted",
        "sum",
        "min",
        "max",
        "any",
        "all",
        "next",
        "deque",
        "join",
    }
)


def _what_it_calls(fn: object, hops: list[str]):
    """``fn``, then each callable it hands its call straight on to, giving back what that returns: the function
    of a ``staticmethod``, ``classmethod``, bound method or ``functools.partial``, and the ``__wrapped__`` of a
    ``functools.lru_cache`` (or ``cache``) or of a ``functools.wraps`` decorator whose own code does not run what
    it wraps (no loop, none of :data:`_DRIVERS`). ``hops`` gets how each was reached (attack30 a06: these were
    run, and every rank raised that a coroutine cannot be pickled)."""
    seen = set()
    layer = fn
    while layer is not None and id(layer) not in seen and len(seen) < _MAX_WRAPPING:
        seen.add(id(layer))
        yield layer
        try:
            layer, how = _passes_on(layer)
        except Exception:  # noqa: BLE001 - a learner's object whose attributes raise: not followed further
            return
        if not callable(layer):  # staticmethod(42) is callable; what it holds is not, and is not followed
            return
        hops.append(how)


def _passes_on(layer: object) -> tuple[object | None, str]:
    """(the callable ``layer`` hands its call straight on to, how), or (None, "") where it may do more."""
    import functools

    if isinstance(layer, (staticmethod, classmethod)):
        return layer.__func__, f"{type(layer).__name__}()"
    if isinstance(layer, functools.partial):
        return layer.func, "functools.partial"
    if inspect.ismethod(layer):
        return layer.__func__, "a bound method"
    inner = getattr(layer, "__wrapped__", None)
    if inner is None or not callable(inner):
        return None, ""
    if type(layer) is getattr(functools, "_lru_cache_wrapper", None):
        return inner, "functools.lru_cache"
    own = layer if inspect.isfunction(layer) else type(layer).__call__  # callable: checked by the caller
    if inspect.isfunction(own) and not _may_run_it(own.__code__):
        return (
            inner,
            f"a functools.wraps decorator, {own.__code__.co_qualname!r}, whose code hands back what it returns",
        )
    return None, ""


def _may_run_it(code, depth: int = 0) -> bool:
    """Whether a wrapper's code (or a function defined in it) has a loop or refers to one of :data:`_DRIVERS`."""
    import dis

    if set(code.co_names) & _DRIVERS:
        return True
    if any(op.opname in ("GET_ITER", "GET_AITER", "FOR_ITER") for op in dis.get_instructions(code)):
        return True
    return depth < 8 and any(_may_run_it(const, depth + 1) for const in code.co_consts if isinstance(const, type(code)))


#: Variables that choose the network interface a backend's sockets listen on (gloo, TensorPipe, NCCL).
INTERFACE_VARIABLES = ("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
#: Variables that name the address of the group's store.
ADDRESS_VARIABLES = ("MASTER_ADDR",)


def _is_loopback_interface(name: str) -> bool:
    """``lo`` and the like: an interface the kernel marks loopback (``IFF_LOOPBACK`` in its flags)."""
    if name in ("lo", "lo0"):
        return True
    try:
        with open(f"/sys/class/net/{os.path.basename(name)}/flags") as f:
            return bool(int(f.read(), 16) & 0x8)
    except (OSError, ValueError):
        return False


def _is_loopback_address(address: str) -> bool:
    import ipaddress

    if address.strip().lower() in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def _beyond_loopback(key: str, value: str) -> str | None:
    """What ``key=value`` in ``env`` would open beyond this machine's loopback, or None."""
    if key in INTERFACE_VARIABLES:
        outside = [name for name in value.split(",") if not _is_loopback_interface(name.strip())]
        if outside:
            return f"the ranks' sockets would listen on {', '.join(repr(n) for n in outside)}"
    elif key in ADDRESS_VARIABLES and not _is_loopback_address(value):
        return f"the group's store would be sought at {value!r}"
    return None


#: Variables barrierlab hands to torch in every rank as it is set up (``_rank.read_import_time_environment``), with
#: the values torch accepts: torch compares them in upper case (ASCII only, C++'s ``toupper``) and refuses any
#: other, an empty value included, which would end every rank in its set-up (attack31 a08).
TORCH_CHOICES = {"TORCH_DISTRIBUTED_DEBUG": ("OFF", "INFO", "DETAIL")}


def _refused_by_torch(key: str, value: str) -> str | None:
    """Why torch would refuse ``key=value`` in a rank's set-up, or None."""
    choices = TORCH_CHOICES.get(key)
    if choices is None or (value.isascii() and value.upper() in choices):
        return None
    return (
        f"torch accepts only {', '.join(choices[:-1])} or {choices[-1]} (in any case, nothing around it), and "
        f"barrierlab hands {key} to torch as each rank is set up: every rank would fail before your function ran"
    )


def _check_inherited_env(given: dict[str, str]) -> None:
    """The same check of what every rank inherits from this process (``os.environ``, set after torch was imported
    here) where ``env=`` does not replace it."""
    for key in TORCH_CHOICES:
        value = os.environ.get(key)
        refused = None if key in given or value is None else _refused_by_torch(key, value)
        if refused:
            raise ValueError(
                f"os.environ[{key!r}] = {value!r}, which every rank inherits: {refused}. Set it right, or pass "
                f"env={{{key!r}: 'OFF'}}"
            )


#: Variables every rank gets from barrierlab (``_rank._set_environment``): ``env=`` may not change them.
_SET_FOR_EACH_RANK = frozenset(
    {
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "GROUP_WORLD_SIZE",
        "ROLE_RANK",
        "ROLE_NAME",
        "ROLE_WORLD_SIZE",
        "TORCHELASTIC_RESTART_COUNT",
        "TORCHELASTIC_MAX_RESTARTS",
        "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_USE_AGENT_STORE",
        _contain.RUN_MARKER,
    }
)


def _check_env(env: object) -> tuple[tuple[str, str], ...]:
    if env is None:
        return ()
    if not isinstance(env, dict):
        raise TypeError(f"env must be a dict of environment variables, like {{'NAME': 'value'}}, got {_describe(env)}")
    pairs = []
    for key, value in env.items():
        if not isinstance(key, str):
            raise TypeError(f"env keys must be str (variable names), got the key {_describe(key)}")
        if type(key) is not str:  # attack30 a04: one passed every check here, then sending the run failed
            raise TypeError(
                f"env keys must be plain str (variable names), got the key {_describe(key)}, a subclass of str "
                "whose own methods would decide what the ranks see: pass str(key)"
            )
        if not key or "=" in key or "\0" in key:
            raise ValueError(f"env key {key!r} is not a valid variable name (empty, or contains '=' or NUL)")
        if key in _SET_FOR_EACH_RANK:
            raise ValueError(
                f"env[{key!r}]: barrierlab sets {key} in every rank itself, as torchrun does (a rank's number, the "
                "group's size, the run it belongs to, which its clean-up relies on): leave it out of env= (attack14 "
                "a13: a RANK that disagreed with dist.get_rank())"
            )
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise TypeError(
                f"env[{key!r}] must be a str (or an int or float, converted with str()), got {_describe(value)}"
            )
        try:
            value = str.__str__(value) if isinstance(value, str) else str.__str__(str(value))
        except Exception as error:  # noqa: BLE001 - attack30 a05: str() of an int of 5,000 digits raises
            raise ValueError(
                f"env[{key!r}]: {_describe(value)} could not be converted with str() ({type(error).__name__}: "
                f"{str(error)[:200]})"
            ) from None
        if "\0" in value:
            raise ValueError(f"env[{key!r}] contains a NUL character, which no environment variable can hold")
        for what, text in (("key", key), ("value", value)):
            try:
                os.fsencode(text)
            except UnicodeError as error:  # a lone surrogate: os.environ in every rank would refuse it
                raise ValueError(
                    f"env[{key!r}]: its {what} cannot be encoded for the environment ({error.reason} at "
                    f"position {error.start}); an environment variable holds bytes of the file system's encoding"
                ) from None
        refused = _refused_by_torch(key, value)
        if refused:
            raise ValueError(f"env[{key!r}] = {value!r}: {refused}")
        beyond = _beyond_loopback(key, value)
        if beyond:
            raise ValueError(
                f"env[{key!r}] = {value!r}: {beyond}, beyond this machine's loopback interface. barrierlab.run "
                "starts every rank on this machine and keeps every socket on loopback (127.0.0.1): leave "
                f"{key} out (barrierlab sets what the ranks need). For ranks on several machines, use torchrun "
                "(docs/torchrun.md)."
            )
        pairs.append((key, value))
    size = sum(len(os.fsencode(k)) + len(os.fsencode(v)) + 2 for k, v in pairs)
    if size > ENV_LIMIT:
        raise ValueError(
            f"env holds {size:,} bytes, more than the {ENV_LIMIT:,} barrierlab.run passes to the ranks (one "
            "variable of a program started with exec may hold 128 KiB on Linux): pass large data as an argument "
            "(args=) or in a file whose path you pass"
        )
    return tuple(pairs)


#: Bytes of ``env=`` (names and values) barrierlab.run passes to the ranks, at most (attack9: 20 MB was refused
#: by the pipe's frame limit, in an error that did not name ``env``).
ENV_LIMIT = 1 << 20


def validate(
    fn, world_size, args, kwargs, timeout, deadline, env, threads, linger, record, check, init=True
) -> tuple[tuple, dict, RunOptions]:
    """Check every argument of :func:`run` before anything is computed or started.

    ``TypeError`` for a wrong type, ``ValueError`` for a wrong value; the message names the parameter, the
    value and what is allowed. Returns (args, kwargs, options) with the defaults filled in.
    """
    _check_function(fn)
    world_size = _check_count("world_size", world_size, "ranks")
    if not 1 <= world_size <= MAX_WORLD_SIZE:
        raise ValueError(
            f"world_size must be between 1 and {MAX_WORLD_SIZE}, got {world_size}. "
            f"Each rank is a process; past {MAX_WORLD_SIZE} a laptop thrashes and timelines are unreadable "
            "(for more, use torchrun: see docs/torchrun.md)."
        )
    if not isinstance(args, (tuple, list)):
        hint = f"; for one argument write args=({args!r},)" if isinstance(args, (str, bytes, int, float)) else ""
        raise TypeError(f"args must be a tuple (or list) of positional arguments, got {_describe(args)}{hint}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs must be a dict of keyword arguments, got {_describe(kwargs)}")
    for key in kwargs or {}:
        if not isinstance(key, str):
            raise TypeError(f"kwargs keys must be str (parameter names), got the key {_describe(key)}")
    timeout = DEFAULT_TIMEOUT if timeout is None else _check_seconds("timeout", timeout, MAX_TIMEOUT)
    deadline = (
        timeout + DEFAULT_DEADLINE_MARGIN if deadline is None else _check_seconds("deadline", deadline, MAX_DEADLINE)
    )
    env_pairs = _check_env(env)
    _check_inherited_env(dict(env_pairs))
    threads = _check_count("threads", threads, "torch threads per rank")
    if not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads must be between 1 and {MAX_THREADS}, got {threads}")
    options = RunOptions(
        world_size=int(world_size),
        timeout=timeout,
        deadline=deadline,
        env=env_pairs,
        threads=int(threads),
        linger=_check_flag("linger", linger),
        record=_check_flag("record", record),
        check=_check_flag("check", check),
        init=_check_flag("init", init),
    )
    return tuple(args), dict(kwargs or {}), options


def _captured(fn) -> list[tuple[str, object]]:
    """The closure variables and globals a function uses: the usual culprits when it cannot be sent."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    found = []
    for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            found.append((var, cell.cell_contents))
        except ValueError:
            pass
    module_globals = getattr(fn, "__globals__", {})
    found += [(var, module_globals[var]) for var in code.co_names if var in module_globals]
    return found


def _type_name(value: object) -> str:
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


_INSTALLED = tuple({os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


#: (module file, working directory) -> its absolute path if it is the learner's, else None: a kernel holds
#: a thousand or more modules, and checking them all again cost every launch ~7 ms.
_LEARNERS_FILES: dict[tuple[str, str], str | None] = {}


def kernel_cwd() -> str:
    """The kernel's working folder; one that was removed (``os.chdir`` into a temporary folder since deleted) is
    named through /proc, so that the ranks enter the same folder, as forked workers would (attack9 a10:
    ``os.getcwd()`` raised FileNotFoundError out of ``bl.run``)."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        return f"/proc/{os.getpid()}/cwd"


def _learners_file(path: str, cwd: str) -> str | None:
    key = (path, cwd)  # a relative file name means something else in another folder
    if key not in _LEARNERS_FILES:
        full = os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))
        mine = full.endswith(".py") and not full.startswith(_INSTALLED) and not full.startswith(_PACKAGE_DIR)
        _LEARNERS_FILES[key] = full if mine else None
    return _LEARNERS_FILES[key]


def learners_modules() -> tuple[tuple[str, str, bool], ...]:
    """The learner's own modules the kernel has imported from files (outside installed packages and
    barrierlab; never ``__main__``, whose code a notebook defines): (name, file, is a package).

    The call is pickled by reference to them and each rank imports them fresh from these files, as torchrun
    workers do: their module-level code runs in the rank, so ``RANK = int(os.getenv("RANK", -1))`` at the
    top of a module is that rank's rank. A module loaded from a file path with
    ``importlib.util.spec_from_file_location`` is found by its file."""
    found, cwd = [], kernel_cwd()
    if _MODULE_VERDICTS.get("") != cwd:  # a relative __file__ means something else in another folder
        _MODULE_VERDICTS.clear()
        _MODULE_VERDICTS[""] = cwd
    for name, module in sys.modules.copy().items():  # a copy: a finalizer that imports during the walk (CI)
        seen = _MODULE_VERDICTS.get(name)
        if seen is not None and seen[0] is module:  # the same module object as at the last run: its answer
            if seen[1] is not None:
                found.append(seen[1])
            continue
        _MODULE_VERDICTS[name] = (module, entry := _learners_module(name, module, cwd))
        if entry is not None:
            found.append(entry)
    return tuple(sorted(found))


#: module name -> (the module, its learners_modules entry or None), for the modules seen at earlier runs (a
#: kernel holds thousands: looking at each again cost ~2 ms per run); "" -> the folder they were judged in.
_MODULE_VERDICTS: dict = {}


def _learners_module(name: str, module, cwd: str) -> tuple[str, str, bool] | None:
    if name == "__main__" or name.startswith("__mp_main__"):
        return None
    path = getattr(module, "__file__", None)
    full = _learners_file(path, cwd) if isinstance(path, str) else None
    if full is None:
        return None
    spec = getattr(module, "__spec__", None)
    return name, full, spec is not None and spec.submodule_search_locations is not None


def _pack(fn, args: tuple, kwargs: dict, folder: str | None = None) -> bytes:
    """cloudpickle the call, naming exactly what cannot be sent to the ranks.

    Notebook code (``__main__``) goes by value; the learner's modules that have a file go by reference and
    the ranks import them fresh (see :func:`learners_modules`). With ``folder`` (the run's), large tensors
    are written there once and mapped by each rank (``_payload``)."""
    try:
        return _payload.dumps((fn, args, kwargs), folder)
    except Exception:
        _remove_mapped(folder)
    name = getattr(fn, "__qualname__", repr(fn))
    parts = [(f"the variable {var!r} used by {name}", value) for var, value in _captured(fn)]
    parts.append(("the function " + name, fn))
    parts += [(f"argument {i} (args[{i}])", a) for i, a in enumerate(args)]
    parts += [(f"keyword argument {k!r}", v) for k, v in kwargs.items()]
    for label, value in parts:
        try:
            cloudpickle.dumps(value)
        except Exception as error:
            raise TypeError(
                f"barrierlab.run cannot send {label} to the ranks: a {_type_name(value)} "
                f"cannot be pickled ({type(error).__name__}: {error}). Each rank is a separate process, "
                "so everything the function uses is copied to it. Create that object inside the function "
                "instead (open files, locks, process groups, generators cannot be copied)."
            ) from error
    try:
        return _payload.dumps((fn, args, kwargs), None)
    except Exception as error:
        raise TypeError(f"barrierlab.run cannot send the call to the ranks: {type(error).__name__}: {error}") from error


def _remove_mapped(folder: str | None) -> None:
    """Remove the tensor files a failed attempt to pickle the call wrote."""
    if folder:
        for name in os.listdir(folder):
            if name.startswith(PAYLOAD_FILE + "."):
                os.unlink(os.path.join(folder, name))


def _import_torch_distributed():
    """``torch.distributed``, imported with Ctrl-C held back until the import is done. The kernel imports torch
    lazily, at its first run; a KeyboardInterrupt in the middle of that import left torch half-initialised
    (its C extension's types partly registered), and the next run's import of it segfaulted the kernel."""
    with _interrupt_deferred():
        import torch.distributed as dist
    return dist


class _LoopbackStore:
    """A TCPStore this kernel hosts for one run on a socket bound to 127.0.0.1 (a TCPStore of its own
    would listen on every interface). Ranks join it as clients through ``env://`` with
    TORCHELASTIC_USE_AGENT_STORE=True, as torchrun's workers join the agent's store."""

    def __init__(self, timeout: float) -> None:
        import socket
        from datetime import timedelta

        dist = _import_torch_distributed()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(128)
            self.port = listener.getsockname()[1]
        except OSError:
            listener.close()
            raise
        # the store owns the listening socket from here on, and closes it when it is destroyed
        self.store = dist.TCPStore(
            "127.0.0.1",
            self.port,
            None,
            True,
            timedelta(seconds=timeout),
            wait_for_workers=False,
            master_listen_fd=listener.detach(),
        )

    def untouched(self) -> bool:
        """Whether the store holds no key yet (a client's connection writes none; one round trip, ~20 us)."""
        try:
            return self.store is not None and self.store.num_keys() == 0
        except Exception:  # noqa: BLE001 - a store that does not answer is not used
            return False

    def close(self) -> None:
        """Stop the store in the background (its server thread takes ~0.1 s to stop)."""
        store, self.store = self.store, None
        if store is not None:
            _stores.stop_later(store)


class _Stores:
    """Two threads of the kernel's, each started once, that keep the making and the stopping of stores out of the
    launch's path: a store is made after one run for the one after next (``RunSpec.next_store_port`` names a store
    that exists at the launch: the ranks the warm process pools after it connect to it as they wait), which took
    1-4 ms of every launch on the 2-core machine; a store is stopped on the other (its server thread takes 0.1 s
    to stop), without a new thread each time (whose start waited for the thread to run: milliseconds under load)."""

    #: How long a launch waits for the store being made before it makes one itself.
    WAIT = 5.0

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spare: _LoopbackStore | None = None
        self.made = threading.Event()
        self.made.set()
        self.asked: queue.SimpleQueue = queue.SimpleQueue()
        self.stopping: queue.SimpleQueue = queue.SimpleQueue()
        self.threads: dict[str, threading.Thread] = {}

    def _start(self, name: str, target) -> None:
        thread = self.threads.get(name)
        if thread is None or not thread.is_alive():
            self.threads[name] = thread = threading.Thread(target=target, daemon=True, name=name)
            thread.start()

    def make_spare(self) -> None:
        """Ask for a store to be made now, in the background, for a later launch (nothing if one is made)."""
        with self.lock:
            if self.spare is not None or not self.made.is_set():
                return
            self.made.clear()
            self._start("barrierlab-store-maker", self._make)
        self.asked.put(True)

    def _make(self) -> None:
        while self.asked.get():
            try:
                store = _LoopbackStore(STORE_TIMEOUT_FLOOR)
            except Exception:  # noqa: BLE001 - the launch makes its own
                store = None
            with self.lock:
                self.spare = store
            self.made.set()

    def take_spare(self) -> _LoopbackStore | None:
        """The store made in the background (waiting for it if it is being made), or None."""
        self.made.wait(self.WAIT)
        with self.lock:
            store, self.spare = self.spare, None
        return store

    def stop_later(self, store) -> None:
        with self.lock:
            self._start("barrierlab-store-stop", self._stop)
        self.stopping.put(store)

    def _stop(self) -> None:
        while True:
            store = self.stopping.get()
            del store  # the last reference: its server thread is stopped and joined here

    def close(self) -> None:
        """Stop the spare store (the kernel shuts barrierlab down)."""
        store = self.take_spare() if self.made.is_set() else None
        if store is not None:
            store.close()


_stores = _Stores()


def run(
    fn,
    world_size: int = DEFAULT_WORLD_SIZE,
    *,
    args: tuple = (),
    kwargs: dict | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    deadline: float | None = None,
    env: dict[str, str] | None = None,
    threads: int = 1,
    linger: bool = False,
    record: bool = True,
    check: bool = False,
    live: bool | None = None,
    init: bool = True,
) -> Run:
    """Run ``fn(*args, **kwargs)`` on ``world_size`` ranks of a fresh gloo group and return what each did.

    The group is initialised before ``fn`` starts, so ``fn`` is ordinary torch.distributed code.

    - ``fn``: an ordinary function (not a generator or ``async def`` function, nor one behind a ``staticmethod``,
      ``functools.partial``, ``lru_cache`` or pass-through ``functools.wraps`` decorator: their bodies would not run).
    - ``world_size``: 1 to :data:`MAX_WORLD_SIZE` ranks.
    - ``args``: a tuple (or list) of positional arguments; ``kwargs``: a dict with str keys.
    - ``timeout``: the default group's timeout, given to ``init_process_group`` (seconds, at most
      :data:`MAX_TIMEOUT`): a collective on it that waits longer raises in the rank. Groups the function makes
      with ``dist.new_group()`` get their own ``timeout=``, else torch's default (30 minutes on gloo), not this
      one. ``None`` means the default, :data:`DEFAULT_TIMEOUT`.
    - ``deadline``: wall-clock limit for the whole run (seconds, at most :data:`MAX_DEADLINE`), counted from
      the start of the ranks (a first run may wait before that for the warm process to import torch);
      ``None`` means ``timeout + 5``. Ranks still running then are asked for their stacks and killed, and
      the call returns.
    - ``env``: environment variables set in every rank before the group starts, as a dict of str to str
      (plain str keys; int and float values are converted with ``str()``; None, bool and other types are
      refused).
      ``TORCH_DISTRIBUTED_DEBUG`` is re-read, as ``dist.set_debug_level_from_env()`` would. Every socket of a
      run stays on loopback: ``GLOO_SOCKET_IFNAME``/``TP_SOCKET_IFNAME``/``NCCL_SOCKET_IFNAME`` naming another
      interface, or a ``MASTER_ADDR`` that is not a loopback address, is refused (ValueError).
    - ``threads``: torch intra-op threads per rank (default 1: N ranks share a few cores).
    - ``linger``: keep finished ranks alive until all are done, like ranks that go on with other work;
      by default a finished rank exits, as at the end of a script, and peers still waiting on it fail fast.
    - ``record``: record collectives and ``barrierlab.span`` phases for ``Run.timeline()``.
    - ``check``: raise :class:`~barrierlab.result.RankFailed` if any rank did not finish.
    - ``live``: show every rank while the call waits (see :mod:`barrierlab.live`): ``None`` (default) shows
      it in a notebook opened in a Jupyter front end and on a terminal, never under nbval or in a pipe;
      ``False`` never, ``True`` always. ``BARRIERLAB_LIVE=0`` turns it off everywhere.
    - ``init``: ``True`` (default) starts the group before ``fn``. ``False`` leaves it to your code, as in
      tutorials that call ``init_process_group`` themselves: ``fn`` is called as ``mp.spawn`` calls it,
      ``fn(rank, *args, **kwargs)`` (so ``run(demo_basic, 4, args=(4,), init=False)`` runs
      ``mp.spawn(demo_basic, args=(4,), nprocs=4)``). Whatever MASTER_ADDR/MASTER_PORT or ``tcp://`` address
      your code sets, its group joins a store barrierlab hosts on 127.0.0.1 (nothing listens beyond
      loopback, runs never collide on a port); ``rank``/``world_size`` given to ``init_process_group`` must
      be the rank passed in and ``world_size``; ``timeout`` defaults to this run's.

    Every rank has torchrun's environment: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, and
    MASTER_ADDR/MASTER_PORT (127.0.0.1 and the launcher's store) with TORCHELASTIC_USE_AGENT_STORE=True, and the
    rest of what torch elastic's agent sets for a worker (GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_NAME,
    ROLE_WORLD_SIZE, TORCHELASTIC_RUN_ID, ...): ``dist.is_torchelastic_launched()`` is True in a rank.
    Functions from notebook cells are sent by value. Your own modules that have a file (anything outside
    installed packages) are sent by reference and **each rank imports them fresh from their files**, as
    torchrun workers do: module-level code runs in the rank and sees its RANK, and a file edited since the
    kernel imported it is what the ranks run (the kernel keeps its old copy until you reload it).

    ``linger``, ``record``, ``check`` and ``init`` must be True or False (``live`` also None). Every argument
    is checked before anything starts: ``TypeError`` for a wrong type, ``ValueError`` for a wrong value.
    """
    if os.environ.get(_contain.RUN_MARKER):
        raise RuntimeError(
            "barrierlab.run was called inside a rank of another barrierlab.run (by the rank's code, or a program "
            "it started): a rank cannot start ranks of its own (they would outlive its deadline and leave their "
            "folder behind). Call the collectives in the rank itself, or run the inner function from the notebook."
        )
    args, kwargs, options = validate(
        fn, world_size, args, kwargs, timeout, deadline, env, threads, linger, record, check, init
    )
    view_kind = choose_view(None if live is None else _check_flag("live", live))
    run_dir = None
    collector = _CollectorPause()
    try:
        # made and named in one step that a Ctrl-C cannot split: one arriving between them left the folder behind
        with _interrupt_deferred():
            run_dir = tempfile.mkdtemp(prefix=run_dir_prefix(os.getpid(), _my_start()))
        payload = _pack(fn, args, kwargs, folder=run_dir)  # refused here, before the warm process is asked
        with _lock:
            warm_up()
            try:
                _warm.wait_ready()
            except LaunchError:
                shutdown()
                warm_up(wait=True)
            index = CodeIndex().add((fn, args, kwargs))
            try:
                try:
                    result, check_by = _launch(_warm, payload, run_dir, options, index, view_kind, collector)
                except RanksNotForked:  # once more, with a fresh warm process (a rank may have lowered its limits)
                    _clear_failed_launch(run_dir)
                    warm_up()
                    _warm.wait_ready()
                    result, check_by = _launch(_warm, payload, run_dir, options, index, view_kind, collector)
            except KeyboardInterrupt:
                raise KeyboardInterrupt(
                    f"barrierlab.run was interrupted; all {options.world_size} ranks were stopped"
                ) from None
    except BaseException:
        collector.resume()
        raise
    finally:
        if run_dir is not None:
            _remove_run_dir(run_dir)
    try:
        # only now, the run's bookkeeping done and its folder removed: whatever the values do, within the deadline
        result.unpickle(within=max(UNPICKLE_FLOOR, check_by - time.monotonic()))
    finally:
        collector.resume()
        if _warm is not None:
            _stores.make_spare()  # for the launch after next, while the learner reads this one
    return result.raise_if_failed() if options.check else result


def _my_start() -> int:
    global _START
    if _START is None:
        _START = _contain.start_time(os.getpid()) or 0
    return _START


_START: int | None = None


#: Most stale run folders one start sets aside (a temp folder may hold any number of names like theirs): the rest
#: at a later start.
STALE_PER_START = 100


def remove_stale_run_dirs(folder: str | None = None, owners: set[int] | None = None) -> list[str]:
    """Remove run folders (``barrierlab-run-<pid>-<start>-*``, and ``barrierlab-gone-*`` set aside to be removed)
    this user's kernels left when they died (a SIGKILL leaves no chance to clean up); with ``owners``, only those
    of these PIDs (a run's ranks, which may have called ``barrierlab.run`` themselves despite its refusal). Never
    one of a live process (its PID and start time are checked), never a symlink, never another user's. Each is set
    aside at once and removed in the background (:func:`_remove_later`), at most :data:`STALE_PER_START` a call:
    removing them here cost the first run as long as they took (attack8 a3). Returns the folders set aside."""
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    # the temp folder holds other programs' files too (torchrun leaves a torchelastic_* folder a job): a name is
    # parsed only if it starts as a run folder's, and with ``owners`` as one of theirs
    if owners is None:
        prefixes: tuple[str, ...] = (RUN_DIR_PREFIX, GONE_DIR_PREFIX)
    else:
        prefixes = tuple(f"{kind}{pid}-" for pid in owners for kind in (RUN_DIR_PREFIX, GONE_DIR_PREFIX))
    mine = gone_dir_prefix(os.getpid(), _my_start())  # being removed by this process
    for name in names:
        if not name.startswith(prefixes) or name.startswith(mine):
            continue
        owner = run_dir_owner(name)
        if owner is None or (owners is not None and owner[0] not in owners):
            continue
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        import stat as stat_

        if not stat_.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        pid, start = owner
        if _contain.start_time(pid) == start:
            continue  # its kernel is alive: the run may be going on (or its folder is being removed)
        _remove_later(path)
        removed.append(path)
        if len(removed) >= STALE_PER_START:
            break
    if owners is None:  # (a run's ranks' cgroups are inside the run's, and end with it)
        for path in _contain.stale_cgroups(lambda name: _owner_is_dead(run_dir_owner(name))):
            _end_cgroup(path)  # what a run started after its rank killed the warm process and the kernel
            removed.append(path)
    return removed


def _temp_folder_state() -> tuple | None:
    """What changes when an entry of the temporary folder is made, removed or renamed (its modification time in
    ns, its count of links, which counts the folders in it, and which folder it is); None if it cannot be read
    (then it counts as changed)."""
    try:
        info = os.stat(tempfile.gettempdir())
    except OSError:
        return None
    return info.st_mtime_ns, info.st_nlink, info.st_ino, info.st_dev


def _owner_is_dead(owner: tuple[int, int] | None) -> bool:
    return owner is not None and _contain.start_time(owner[0]) != owner[1]


def _remove_run_dir(path: str) -> None:
    """Remove a run's folder: set aside at once (one rename, whatever it holds), removed in the background
    (:func:`_remove_later`); a Ctrl-C meanwhile is delivered only once it is set aside."""
    with _interrupt_deferred():
        _remove_later(path)


def _remove_later(path: str) -> None:
    """Rename ``path`` (a folder) aside, beside it, as ``barrierlab-gone-<this kernel>-<random>`` and have
    :data:`_removals` remove it in the background. Removing a run folder inside the call cost the call as long
    as removal took: a rank that made empty folders for 3.6 s held ``bl.run`` 1.6-6.2 s past its deadline
    (attack8 a3); every call ends by its deadline + 1 s. Set aside under this kernel's name, a folder this kernel
    did not finish removing (it died) is a dead kernel's, which the next kernel's first run removes."""
    aside = os.path.join(os.path.dirname(path), gone_dir_prefix(os.getpid(), _my_start()) + uuid.uuid4().hex[:16])
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    except OSError:
        aside = path  # removed under its own name
    _removals.remove(aside)


def _end_cgroup(path: str) -> None:
    """End a run's cgroup: kill what it holds (here: the call returns only once it is dead), then remove it,
    here if it is a single cgroup (one rmdir), else in the background: a rank may have made a tree of cgroups
    below it (root may), which takes a while to walk."""
    _contain.end_cgroup_here_or(path, lambda tree: _removals.remove(tree, cgroup=True))


class _Removals:
    """A thread of the kernel's, started once, that removes what :func:`_remove_later` set aside and cgroup trees
    (:func:`_end_cgroup`), one after the other, outside every call. A folder of at most :data:`SMALL` entries
    and no subfolder (a run's ordinary files) is emptied by the thread; a larger one by ``rm -rf`` in a child
    process (no limit of depth or size, nothing of the kernel's interpreter), which the thread waits for (so
    reaps). At exit, what is still queued is handed to ``rm -rf`` children that outlive the kernel."""

    SMALL = 256

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.todo: queue.SimpleQueue = queue.SimpleQueue()
        self.pending = 0
        self.idle = threading.Condition(self.lock)
        self.thread: threading.Thread | None = None
        self.current: tuple[str, bool] | None = None  # what the thread is removing

    def remove(self, path: str, cgroup: bool = False) -> None:
        with self.lock:
            self.pending += 1
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._work, daemon=True, name="barrierlab-remover")
                self.thread.start()
        self.todo.put((path, cgroup))

    def wait(self, timeout: float) -> bool:
        """Until nothing is queued or being removed (True), at most ``timeout`` seconds (False)."""
        with self.idle:
            return self.idle.wait_for(lambda: self.pending == 0, timeout)

    def _work(self) -> None:
        while True:
            path, cgroup = self.todo.get()
            self.current = (path, cgroup)
            try:
                if cgroup:
                    _contain.remove_cgroup(path)
                else:
                    _segments.unlink_left(path)  # what a rank stopped at the deadline left in /dev/shm (attack9 a4)
                    _remove_folder(path, self.SMALL)
            except Exception:  # noqa: BLE001 - what is left is a dead kernel's for the next kernel to remove
                pass
            finally:
                self.current = None
                with self.idle:
                    self.pending -= 1
                    self.idle.notify_all()

    def at_exit(self) -> None:
        """Hand what is being removed in the thread, and what is still queued, to ``rm -rf`` children not waited
        for (the kernel is ending, and its daemon thread with it; a child already removing one goes on); a cgroup
        tree is removed here (``rm`` cannot), within :data:`_contain.WALK_SECONDS`: a kernel that ended right
        after its run left a rank's chain of cgroups (attack8 a4)."""
        left = [self.current] if self.current is not None else []
        while True:
            try:
                left.append(self.todo.get_nowait())
            except queue.Empty:
                break
        for path, cgroup in left:
            if cgroup:
                _contain.remove_cgroup(path)
            else:
                _segments.unlink_left(path)
                _start_rm(path)


def _remove_folder(path: str, small: int) -> None:
    """Remove the folder ``path`` (a symlink put in its place: only the link): its entries here if they are at
    most ``small`` files, else with ``rm -rf`` in a child process, waited for."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)  # not a folder (a symlink a rank left in its place)
        return
    try:
        names = []
        with os.scandir(fd) as entries:
            for entry in entries:
                if len(names) >= small or entry.is_dir(follow_symlinks=False):
                    names = None
                    break
                names.append(entry.name)
        if names is not None:
            for name in names:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=fd)
            os.rmdir(path)
            return
    except OSError:
        pass
    finally:
        os.close(fd)
    child = _start_rm(path)
    if child is None:
        _files.remove_tree(path)
    else:
        child.wait()


def _start_rm(path: str) -> subprocess.Popen | None:
    """``rm -rf -- path`` in a child of its own session, at a lower priority; None if it could not start."""
    try:
        child = subprocess.Popen(
            ["rm", "-rf", "--", path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, child.pid, 10)
    return child


_removals = _Removals()
atexit.register(_removals.at_exit)


def _write_payload(run_dir: str, payload: bytes) -> str:
    path = os.path.join(run_dir, PAYLOAD_FILE)
    write_new_file(path, payload)
    return path


def _clear_failed_launch(run_dir: str) -> None:
    """Empty a run's folder of what a launch whose ranks were not all forked left (the first ranks' files),
    keeping the call's files (``payload``, ``payload.*``): the next attempt starts as the first did."""
    for name in os.listdir(run_dir):
        if name == PAYLOAD_FILE or name.startswith(PAYLOAD_FILE + "."):
            continue
        path = os.path.join(run_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            _remove_later(path)  # set aside in the run's folder, removed in the background
        else:
            os.unlink(path)


class _CollectorPause:
    """Python's cyclic garbage collector, paused while the ranks run (from the end of that wait when the live
    view draws) until ``run`` returns.

    Reading a flood's records allocates tens of thousands of objects, enough to set off a collection of the
    kernel's whole heap (torch's included): measured after a 6-rank span flood at a load of 10, 1.2-1.6 s of
    wall time after the deadline in one run of three, in the reader or right after it; paused only after the
    deadline, the collection it put off came during the next run's wait and made it end 1 s late. Nothing read
    forms cycles; the learner's code pays the postponed collection, if any, as it would have without the run."""

    def __init__(self) -> None:
        self.paused = False

    def pause(self) -> None:
        if not self.paused and gc.isenabled():
            gc.disable()
            self.paused = True

    def resume(self) -> None:
        if self.paused:
            gc.enable()
            self.paused = False


def _launch(
    warm: _WarmProcess,
    payload: bytes,
    run_dir: str,
    options: RunOptions,
    index: CodeIndex,
    view_kind: str = "none",
    collector: _CollectorPause | None = None,
) -> tuple[Run, float]:
    """Start the ranks, wait for them within the deadline, end every one of them and every process they
    started, and read what they left (values still pickled). Returns the run and when, on the monotonic
    clock, its deadline ends (what is left of it is for checking the values). ``collector``: paused once the
    wait is over (the caller resumes it)."""
    t0 = time.monotonic()
    group = store = next_store = None
    run_id = uuid.uuid4().hex
    cgroup = next_cgroup = changed_cgroup = ""
    try:
        # what was made ahead existed while the last run's ranks ran, and they could reach it (the store's port
        # is in /proc/net/tcp, the cgroup beside theirs): each is taken only if it is as it was made
        store = warm.take_next_store()
        if store is not None and not store.untouched():
            store.close()  # a rank wrote keys in it (its arrival counter: the next run never gathered, attack8 a8)
            store = None
        store = store or _LoopbackStore(STORE_TIMEOUT_FLOOR)
        next_store = _stores.take_spare() or _LoopbackStore(STORE_TIMEOUT_FLOOR)
        prefix = run_dir_prefix(os.getpid(), _my_start())
        cgroup = warm.take_next_cgroup()
        if cgroup and not _contain.cgroup_untouched(cgroup):
            # frozen, limited or holding cgroups (attack8 a5): the warm process moves the pooled ranks out of it
            # into a fresh one (they were put in it), and it is ended after the run. Thawed first: a pooled rank
            # frozen before it wrote its key would write it only once moved, after the warm process gave up on it
            _contain.thaw_cgroup(cgroup)
            changed_cgroup, cgroup = cgroup, ""
        cgroup = cgroup or _contain.make_run_cgroup(prefix + run_id[:16])
        next_cgroup = _contain.make_run_cgroup(prefix + uuid.uuid4().hex[:16]) if cgroup else ""
        payload_path = ""
        if len(payload) > PAYLOAD_INLINE:
            payload_path = os.path.join(run_dir, PAYLOAD_FILE)
            if not os.path.exists(payload_path):  # a second attempt (RanksNotForked) reuses the first's
                _write_payload(run_dir, payload)
            payload = b""
        spec = RunSpec(
            run_id=run_id,
            run_dir=run_dir,
            payload=payload,
            options=options,
            t0=t0,
            kernel_pid=os.getpid(),
            kernel_env=tuple(os.environ.items()),
            cwd=kernel_cwd(),
            sys_path=tuple(p for p in sys.path if isinstance(p, str)),  # the import system skips the others
            payload_path=payload_path,
            start_ticks=_contain.ticks_now(),
            modules=learners_modules(),
            store_port=store.port,
            next_store_port=next_store.port,
            cgroup=cgroup,
            next_cgroup=next_cgroup,
        )
        warm.next_cgroup, next_cgroup = next_cgroup, ""  # the warm process's from here on (ended with it)
        warm.next_store, next_store = next_store, None
        del payload
        group = _RunningGroup(warm, spec)
        temp_before = _temp_folder_state()
        view = None
        try:
            try:
                group.start()
                view = _show_live(view_kind, spec, group, index)
                if collector is not None and view is None:  # the live view's thread draws: it may make cycles
                    collector.pause()
                group.wait_until_done_or_deadline()
                if collector is not None:
                    collector.pause()
                group.ask_stuck_ranks_for_stacks()
            finally:
                if view is not None:
                    view.close()
                group.end_every_rank()  # deadline, interrupt or error: end every rank of this run, only them
        finally:
            if group.warm_broken:
                _discard(warm)
                _contain.kill_cgroup(cgroup)  # everything the run started, however it detached or renamed itself
                _contain.kill_run_leftovers(
                    spec.run_id, set(group.pids), group.since(), folder=_contain.folder_identity(spec.run_dir)
                )
            group.close()
        run = collect(
            spec.run_dir,
            options.world_size,
            spec.t0,
            time.monotonic() - spec.t0,
            group.exits,
            group.stopped,
            group.pids,
            timeout=options.timeout,
            deadline=options.deadline,
            index=index,
            linger=options.linger,
            keys=group.keys,
            held=group.held,
            heads=group.heads,
            # values are read within what is left of the deadline; a run stopped at it gets a moment to read them
            read_until=max(group.started_at + options.deadline, time.monotonic() + VALUE_READ_GRACE),
        )
        _mark_teardown_hangs(run, group.teardown)
        # a rank's own run folder (every rank has ended), looked for only if the temporary folder changed while the
        # ranks ran: listing it took 5-6 ms of the kernel's CPU at the end of every call (3,500 entries)
        temp_after = _temp_folder_state()
        if group.pids and (temp_after is None or temp_after != temp_before):
            remove_stale_run_dirs(owners=set(group.pids))
        run.launcher_note = group.lost_warm_note()
    finally:
        if group is not None:
            group.release()
        if cgroup or next_cgroup or changed_cgroup:
            with _interrupt_deferred():
                _end_cgroup(cgroup)
                _end_cgroup(next_cgroup)  # made, but not handed to the warm process
                _end_cgroup(changed_cgroup)  # the pooled ranks in it were moved out at the launch
        for made in (store, next_store):  # next_store: made, but not handed to the warm process
            if made is not None:
                made.close()
    return run, group.started_at + options.deadline


def _show_live(kind: str, spec: RunSpec, group: _RunningGroup, index: CodeIndex) -> LiveView | None:
    """The live view of this run (a daemon thread that reads the ranks' files; it never delays the run)."""
    if kind == "none":
        return None
    folder, world_size = spec.run_dir, spec.options.world_size

    def endings() -> dict[int, str]:
        return ended_ranks(folder, world_size, dict(group.exits))

    def where(site: tuple) -> str:
        file, line, func = site
        return str(Site(index.resolve(file, line, func), line, func))

    events = [RankFiles(folder, rank).events for rank in range(world_size)]
    deadline = spec.options.deadline + (group.started_at - spec.t0)  # as the kernel counts it: from the start
    return LiveView(kind, events, spec.t0, deadline, endings, where, recorded=spec.options.record)


def _discard(warm: _WarmProcess) -> None:
    """Kill a warm process that died or stopped answering (its ranks die with it: PR_SET_PDEATHSIG); the
    next run starts a new one."""
    global _warm
    if warm.alive():
        warm.process.kill()  # our own unreaped child: its PID cannot have been reused
        try:
            warm.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
    warm.close()
    if _warm is warm:
        _warm = None


def _process_runs(pid: int) -> bool:
    """False once the process has exited (a zombie not yet reaped by the warm process, or gone). Where there
    is no /proc, True: the warm process's exit messages decide."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        return True
    return state not in (b"Z", b"X")


def _status_of(spec: RunSpec, rank: int, key: bytes = b"") -> Status | None:
    try:
        outcome = Outcome.read(RankFiles(spec.run_dir, rank).outcome, key, pickles=False)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None if outcome is None else outcome.status


def _mark_teardown_hangs(run: Run, ranks: set[int]) -> None:
    """Keep the finished status and value of ranks ended in torch's teardown and flag them: each one's summary
    line and the diagnosis say so (not stderr, which in a notebook is an output of the cell, nbval's included)."""
    for result in run.ranks:
        result.teardown_hung = result.rank in ranks
        if result.teardown_hung:
            result.exit_code = 0


class _RunningGroup:
    """The ranks of one run, seen from the kernel: their PIDs (and pidfds), which have exited, which were
    stopped, and whether the warm process has confirmed that nothing they started is left."""

    def __init__(self, warm: _WarmProcess, spec: RunSpec) -> None:
        self.warm = warm
        self.spec = spec
        self.world_size = spec.options.world_size
        self.exits: dict[int, tuple[int | None, int | None]] = {}  # rank -> (exit code, signal)
        self.stopped: set[int] = set()
        self.pids: list[int] = []
        self.keys: list[bytes] = []  # rank -> the key its outcome is sealed with (b"": none to check)
        self.start_times: list[int] = []  # when each rank started (clock ticks since boot), as the warm process read it
        self.pidfds: dict[int, int] = {}  # rank -> pidfd, opened while the rank was known to be ours
        self.launched = False
        self.started = False
        self.started_at = spec.t0
        self.swept = False
        self.warm_broken = False
        self.lost_warm = ""  # how the warm process ended, if it died during the run
        self.lost_warm_why = ""  # and why, in words
        self.lost_warm_ranks: list[int] | None = None  # ranks still running then (they died with it)
        self.teardown: set[int] = set()  # ranks that finished, then hung in torch's teardown
        self.not_forked = ""  # why the warm process could not fork the ranks, if it could not
        #: rank -> its outcome file, opened as soon as the kernel saw it (and kept open until the run is read):
        #: another rank, or a program one started, may remove it from the run's folder before the run ends
        self.held: dict[int, BinaryIO] = {}
        #: rank -> the start of its events file, read while the kernel waits (what is left after the deadline is
        #: the file's end: a 6-rank span flood's heads were half of the kernel's reading then)
        self.heads = event_heads(spec.run_dir, self.world_size) if spec.options.record else {}
        self.longest_look = 0.0  # seconds the longest reading of the heads took

    def start(self) -> None:
        try:
            self._start()
        except (WarmProcessLost, _SendFailed) as error:
            self.warm_broken = True
            if self.started:
                raise
            raise WarmLostBeforeLaunch(str(error)) from None

    def _start(self) -> None:
        try:
            self.send(Launch(self.spec))
        except LaunchError as error:
            raise _SendFailed(str(error)) from None
        self.launched = True
        give_up = time.monotonic() + self.start_timeout()
        while not self.started:
            remaining = give_up - time.monotonic()
            message = self.warm.receive(min(remaining, 0.1)) if remaining > 0 else None
            if message is None and (remaining <= 0 or _contain.is_stopped(self.warm.process.pid)):
                self.warm_broken = True
                raise LaunchError(
                    "the warm process did not start the ranks (it stopped answering); the next run starts a new one"
                )
            self.note(message)
            if self.not_forked:
                self.warm_broken = True  # its limits may stay lowered: the next launch goes to a fresh one
                raise RanksNotForked(f"the warm process could not start the ranks ({self.not_forked})")
        self.started_at = time.monotonic()

    def start_timeout(self) -> float:
        """How long the warm process may take to fork the ranks. While it imports a module it answers only once
        that import is done (torch._dynamo takes seconds on a loaded machine); the run's deadline counts from
        the start of the ranks, so that wait does not eat into it. A stopped warm process is found at once."""
        if not self.warm.preloaded:
            return PRELOADING_CONFIRM_TIMEOUT
        return min(START_TIMEOUT, max(self.spec.options.deadline, START_ANSWER_TIMEOUT))

    def confirm_timeout(self) -> float:
        """How long the warm process may take to confirm that the ranks (and what they started) are gone. Once
        it has started them it imports nothing until they are all reaped (``_warm.WarmProcess.serve``), so it
        answers within :data:`CONFIRM_TIMEOUT` whether or not it has finished preloading; only before it
        has answered ``Started`` may it be busy importing a module."""
        return CONFIRM_TIMEOUT if self.warm.preloaded or self.started else PRELOADING_CONFIRM_TIMEOUT

    def warm_stopped(self) -> bool:
        """The warm process is stopped (SIGSTOP, a tracer) or dead: it will not answer, however long we wait."""
        return _contain.is_stopped(self.warm.process.pid)

    def send(self, message: Message) -> None:
        try:
            self.warm.send(message)
        except LaunchError:
            self.warm_broken = True
            raise

    def key(self, rank: int) -> bytes:
        return self.keys[rank] if rank < len(self.keys) else b""

    def since(self) -> int:
        """When (clock ticks since boot) the first process of this run started: the run's start, or earlier
        for ranks the warm process forked ahead of time (its pool)."""
        return min([self.spec.start_ticks, *self.start_times])

    def note(self, message: Message | None) -> None:
        if isinstance(message, Started) and message.run_id == self.spec.run_id and not self.started:  # once: a
            # rank could send another, naming keys of its own to seal the other ranks' outcomes
            self.started, self.pids, self.keys = True, list(message.pids), list(message.keys)
            self.start_times = [start for start in message.start_times if start]
            for rank, (pid, start) in enumerate(zip(message.pids, message.start_times or [None] * len(message.pids))):
                fd = _contain.open_pidfd(pid, start or None)
                if fd is not None:
                    self.pidfds[rank] = fd
        elif isinstance(message, LaunchFailed) and message.run_id == self.spec.run_id and not self.started:
            self.not_forked = message.reason
        elif isinstance(message, Exited) and message.run_id == self.spec.run_id:
            # believed only when the kernel sees the rank's process ended: any rank knows the run id, and
            # can write into this pipe (/proc/<pid>/fd); a forged exit of a live rank would lose its result
            if 0 <= message.rank < self.world_size and message.rank in self.ended():
                self.exits[message.rank] = (message.code, message.sig)
                self.hold_outcome(message.rank)
        elif isinstance(message, Swept) and message.run_id == self.spec.run_id:
            if self.started and not set(range(self.world_size)) - self.ended():  # never while a rank lives
                self.swept = True

    def pump(self, seconds: float) -> None:
        """Wait up to ``seconds`` for one message from the warm process and note it if it is ours."""
        try:
            self.note(self.warm.receive(seconds))
        except LaunchError as error:
            self.warm_broken = True
            if isinstance(error, WarmProcessLost):
                self.lost_warm, self.lost_warm_why = error.how, error.why
            raise

    def lost_warm_note(self) -> str:
        """What the learner is told when the warm process died during the run, or ""."""
        if not self.lost_warm:
            return ""
        ranks = self.lost_warm_ranks
        if ranks is None:
            caught = ""
        elif ranks:
            caught = f"; rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))} died with it (killed)"
        else:
            caught = "; no rank was still running"
        return (
            f"the warm process that started the ranks {self.lost_warm} during the run, {self.lost_warm_why}{caught}. "
            "The ranks that had finished keep their results; the next run starts a new warm process."
        )

    def signal_all(self, signum: int) -> None:
        self.send(SignalRanks(self.spec.run_id, int(signum)))

    def signal_directly(self, ranks: set[int], signum: int) -> None:
        """Signal ranks through the kernel's own pidfds: no need for the warm process to answer."""
        for rank in ranks:
            fd = self.pidfds.get(rank)
            if fd is not None:
                _contain.signal_pidfd(fd, signum)

    def dead(self) -> set[int]:
        """Ranks whose process has ended, as the kernel's pidfds tell (whether or not it was reaped)."""
        if not self.pidfds:
            return set()
        ready = _protocol.readable(list(self.pidfds.values()), 0)
        return {rank for rank, fd in self.pidfds.items() if fd in ready}

    def ended(self) -> set[int]:
        """Ranks whose process the kernel itself sees ended: its pidfd (or, without one, /proc) says so."""
        ended = self.dead()
        for rank, pid in enumerate(self.pids):
            if rank not in self.pidfds and not _process_runs(pid):
                ended.add(rank)
        return ended

    def reported(self) -> set[int]:
        """Ranks whose outcome file is written (a lingering rank writes it, then waits to be ended); each is
        held open from then on (:meth:`hold_outcome`)."""
        for rank in set(range(self.world_size)) - set(self.held):
            self.hold_outcome(rank)
        return set(self.held)

    def hold_outcome(self, rank: int) -> None:
        """Open rank's outcome file, if it is there and not yet held, and keep it open until the run is read:
        if it is removed from the run's folder meanwhile, what the rank wrote is still read (and the removal
        said), rather than taken for a rank that exited without a word."""
        if rank in self.held:
            return
        try:
            self.held[rank] = _files.open_regular(RankFiles(self.spec.run_dir, rank).outcome)
        except (OSError, ValueError):
            pass

    def release(self) -> None:
        """Close the outcome files held open (once the run is read)."""
        for f in self.held.values():
            f.close()
        self.held.clear()

    def running(self) -> set[int]:
        return set(range(self.world_size)) - set(self.exits)

    def wait_until_done_or_deadline(self) -> None:
        """Until every rank has exited (with ``linger``: exited or reported its outcome), or the deadline; once
        every rank has reported its outcome (without ``linger``), at most :data:`TEARDOWN_GRACE` more for ranks
        still running, which hang in torch's teardown after the function returned."""
        give_up = self.started_at + self.spec.options.deadline
        try:
            self._wait_until_done_or(give_up)
        except WarmProcessLost:
            self.ranks_died_with_the_warm_process(give_up)

    def ranks_died_with_the_warm_process(self, give_up: float) -> None:
        """The warm process is gone (a rank or another program killed it): every rank still running dies
        with it (``PR_SET_PDEATHSIG``). Wait briefly for that through the kernel's own pidfds, count each rank
        that had not reported as killed by SIGKILL, and say what happened (:attr:`lost_warm`)."""
        until = min(give_up, time.monotonic() + CONFIRM_TIMEOUT)
        while self.running() - self.dead() and time.monotonic() < until:
            time.sleep(0.01)
        reported = self.reported()
        caught = sorted(r for r in self.running() & self.dead() if r not in reported)
        for rank in caught:
            self.exits[rank] = (None, int(signal.SIGKILL))
        self.lost_warm_ranks = caught

    def _wait_until_done_or(self, give_up: float) -> None:
        linger = self.spec.options.linger
        silent_since = None
        while (running := self.running()) and (remaining := give_up - time.monotonic()) > 0:
            if linger and not running - self.reported():
                break
            if not linger and len(self.reported()) == self.world_size:
                grace_end = min(give_up, time.monotonic() + TEARDOWN_GRACE)
                while self.in_teardown() and (remaining := grace_end - time.monotonic()) > 0:
                    self.pump(min(remaining, 0.02))
                break
            self.pump(min(remaining, 0.02 if linger else 0.1))
            self.read_heads(give_up)
            if self.running() and self.running() <= self.ended():  # dead, yet the warm process says nothing
                silent_since = silent_since or time.monotonic()
                if time.monotonic() - silent_since > self.confirm_timeout() or self.warm_stopped():
                    self.warm_broken = True
                    return
            else:
                silent_since = None

    def read_heads(self, give_up: float) -> None:
        """Read on in each rank's events file until its head is whole (nothing more once it is), unless the
        deadline is too near: a look must not delay it (the margin grows with the longest look so far)."""
        started = time.monotonic()
        if give_up - started < max(HEAD_READ_MARGIN, 2 * self.longest_look):
            return
        for head in self.heads.values():
            head.read_more(HEAD_LINES_PER_LOOK)
        self.longest_look = max(self.longest_look, time.monotonic() - started)

    def in_teardown(self) -> set[int]:
        """Ranks that reported their outcome and whose process still runs. Read from /proc, not only from the
        warm process's exit messages, which come late while it imports modules between launches."""
        return {r for r in self.running() & self.reported() if r < len(self.pids) and _process_runs(self.pids[r])}

    def ask_stuck_ranks_for_stacks(self) -> None:
        """At the deadline: STACK_SIGNAL makes faulthandler write each stuck rank's stack; wait a little for it.
        A rank that reported its outcome and is still running is not stuck in the learner's code: it lingers,
        or (``teardown``) it hangs in torch's teardown after the function returned."""
        running = self.running() - self.dead()
        self.stopped = running - self.reported()
        if not self.spec.options.linger:
            self.teardown = {r for r in self.in_teardown() if _status_of(self.spec, r, self.key(r)) is Status.FINISHED}
        if not self.stopped and not self.teardown:
            return
        self.signal_directly(self.stopped, STACK_SIGNAL)
        grace_end = time.monotonic() + STACK_GRACE
        stacks = [RankFiles(self.spec.run_dir, r).stack for r in self.stopped]
        while time.monotonic() < grace_end and self.running():
            if all(_size(path) > 0 for path in stacks):
                time.sleep(0.02)  # the last lines of the dump
                break
            time.sleep(0.01)

    def end_every_rank(self) -> None:
        """SIGKILL every rank still running (through the kernel's pidfds, and through the warm process,
        which takes each rank's process group too), then wait, briefly, for the warm process to confirm
        every exit and that nothing the ranks started is left; if it does not, it is broken."""
        if not self.launched or self.not_forked:  # none forked, or all killed and reaped by the warm process
            return
        if not self.started:  # interrupted between Launch and Started: the ranks may be running already
            give_up = time.monotonic() + self.confirm_timeout()
            try:
                while not self.started and not self.warm_broken and time.monotonic() < give_up:
                    self.pump(min(0.1, max(0.0, give_up - time.monotonic())))
                    if not self.started and self.warm_stopped():
                        break
            except LaunchError:
                pass
            if not self.started:
                self.warm_broken = True
                return
        running = self.running()
        self.signal_directly(running, signal.SIGKILL)
        if running and self.spec.cgroup:
            _contain.kill_cgroup(self.spec.cgroup, within=0.0)  # what the ranks started dies with them, not after
        try:
            if running and not self.warm_broken:
                self.signal_all(signal.SIGKILL)
            give_up, extended = time.monotonic() + self.confirm_timeout(), False
            while not self.warm_broken and (self.running() or not self.swept):
                if time.monotonic() >= give_up:
                    if extended:
                        break
                    give_up, extended = give_up + SWEEP_CONFIRM_EXTRA, True  # it may be reaping hundreds
                self.pump(min(0.05, max(0.0, give_up - time.monotonic())))
                if (self.running() or not self.swept) and self.warm_stopped():
                    break  # a stopped warm process never confirms: replace it now, not after the wait
        except LaunchError:
            self.warm_broken = True
        if self.running() or not self.swept:
            self.warm_broken = True

    def close(self) -> None:
        for fd in self.pidfds.values():
            os.close(fd)
        self.pidfds.clear()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
