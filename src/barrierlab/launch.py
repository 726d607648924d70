"""Start a gloo process group of N local ranks, run a function on each, and always end within a deadline.

``run(fn, world_size)`` is the one verb; it returns a :class:`~barrierlab.result.Run`.  Ranks are forked
by a warm process that has torch imported already (see ``_zygote.py``), so a launch costs tens of
milliseconds instead of seconds, and forking never happens from the multi-threaded kernel itself.
"""

from __future__ import annotations

import atexit
import numbers
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import cloudpickle

from barrierlab import _zygote
from barrierlab.result import Run, collect
from barrierlab.sites import CodeIndex

#: torch's own timeout for every collective in the group (torch's default is 30 minutes).
DEFAULT_TIMEOUT = 5.0
#: Extra wall time the launcher allows beyond the group timeout before it stops the ranks.
DEFAULT_DEADLINE_MARGIN = 5.0
#: Largest group ``run`` starts: beyond it timelines stop being readable and a 2-core laptop thrashes.
MAX_WORLD_SIZE = 16
#: How long stuck ranks get to write their Python stacks before they are killed.
STACK_GRACE = 0.3
#: How long the first launch may wait for the warm process to import torch.
START_TIMEOUT = 120.0


class LaunchError(RuntimeError):
    """The ranks could not be started (the warm process failed or died)."""


class _WarmProcess:
    """The handle on the warm process: a child of this kernel that forks ranks on request."""

    def __init__(self) -> None:
        package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        bootstrap = f"import sys; sys.path.insert(0, {package_parent!r}); from barrierlab._zygote import main; main()"
        self.process = subprocess.Popen(
            [sys.executable, "-c", bootstrap],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True, close_fds=True,
        )
        self.to_fd = self.process.stdin.fileno()
        self.from_fd = self.process.stdout.fileno()
        self.pid: int | None = None

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: tuple) -> None:
        try:
            _zygote.send(self.to_fd, message)
        except (BrokenPipeError, OSError) as error:
            raise LaunchError(f"the warm process (pid {self.process.pid}) is gone: {error}") from None

    def receive(self, timeout: float) -> tuple | None:
        """The next message, None after ``timeout`` seconds; LaunchError if the warm process died."""
        readable, _, _ = select.select([self.from_fd], [], [], max(timeout, 0.0))
        if not readable:
            return None
        message = _zygote.recv(self.from_fd)
        if message is None:
            code = self.process.wait()
            raise LaunchError(f"the warm process that starts ranks exited (code {code}); the next run starts a new one")
        return message

    def wait_ready(self) -> None:
        if self.pid is not None:
            return
        give_up = time.monotonic() + START_TIMEOUT
        while (remaining := give_up - time.monotonic()) > 0:
            message = self.receive(remaining)
            if message and message[0] == "ready":
                self.pid = message[1]
                return
        raise LaunchError(f"the warm process did not import torch within {START_TIMEOUT:.0f} s")

    def close(self) -> None:
        if self.alive():
            try:
                _zygote.send(self.to_fd, ("quit",))
                self.process.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()


_lock = threading.RLock()
_warm: _WarmProcess | None = None


def warm_up(wait: bool = False) -> None:
    """Start the warm process now (it imports torch in the background); ``wait=True`` blocks until ready."""
    global _warm
    with _lock:
        if _warm is None or not _warm.alive():
            _warm = _WarmProcess()
        if wait:
            _warm.wait_ready()


def shutdown() -> None:
    """Stop the warm process (and with it any rank still alive). The next ``run`` starts it again."""
    global _warm
    with _lock:
        if _warm is not None:
            _warm.close()
            _warm = None


atexit.register(shutdown)


def _check_inputs(fn, world_size, timeout, deadline, threads) -> None:
    if not callable(fn):
        raise TypeError(
            f"barrierlab.run needs a function to run on every rank, got {fn!r} ({type(fn).__name__}). "
            "Pass the function itself: run(train, world_size=4), not run(train(), ...)."
        )
    if isinstance(world_size, bool) or not isinstance(world_size, numbers.Integral):
        raise TypeError(f"world_size must be a whole number of ranks, got {world_size!r} ({type(world_size).__name__})")
    if not 1 <= world_size <= MAX_WORLD_SIZE:
        raise ValueError(
            f"world_size must be between 1 and {MAX_WORLD_SIZE}, got {world_size}. "
            f"Each rank is a process; past {MAX_WORLD_SIZE} a laptop thrashes and timelines are unreadable "
            "(for more, use torchrun: see the README)."
        )
    for name, value in (("timeout", timeout), ("deadline", deadline)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise ValueError(f"threads must be a positive whole number, got {threads!r}")


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


def _own_modules(*objects) -> set:
    """Modules of the learner's own code (outside installed packages and barrierlab): sent by value, so the
    ranks run exactly what the kernel has (not a re-import of a file edited since) and skip re-importing it."""
    modules = set()
    for obj in objects:
        module = sys.modules.get(getattr(obj, "__module__", None) or "")
        path = os.path.abspath(getattr(module, "__file__", None) or "")
        if module is not None and path and not path.startswith(_INSTALLED) and not path.startswith(_PACKAGE_DIR):
            modules.add(module)
    return modules


def _pack(fn, args: tuple, kwargs: dict) -> bytes:
    """cloudpickle the call, naming exactly what cannot be sent to the ranks."""
    modules = _own_modules(fn, *args, *kwargs.values())
    try:
        for module in modules:
            cloudpickle.register_pickle_by_value(module)
        return cloudpickle.dumps((fn, args, kwargs))
    except Exception:
        pass
    finally:
        for module in modules:
            cloudpickle.unregister_pickle_by_value(module)
    try:
        return cloudpickle.dumps((fn, args, kwargs))  # by reference: the ranks import those modules
    except Exception:
        pass
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
        return cloudpickle.dumps((fn, args, kwargs))
    except Exception as error:
        raise TypeError(f"barrierlab.run cannot send the call to the ranks: {type(error).__name__}: {error}") from error


def run(
    fn,
    world_size: int = 4,
    *,
    args: tuple = (),
    kwargs: dict | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float | None = None,
    env: dict[str, str] | None = None,
    threads: int = 1,
    linger: bool = False,
    record: bool = True,
    check: bool = False,
) -> Run:
    """Run ``fn(*args, **kwargs)`` on ``world_size`` ranks of a fresh gloo group and return what each did.

    The group is initialised before ``fn`` starts, so ``fn`` is ordinary torch.distributed code.

    - ``timeout``: torch's timeout for each collective (seconds), after which torch itself raises.
    - ``deadline``: wall-clock limit for the whole run (default ``timeout + 5``); ranks still running
      then are asked for their stacks and killed, and the call returns.
    - ``env``: environment variables set in every rank before the group starts
      (``TORCH_DISTRIBUTED_DEBUG`` is re-read, as ``dist.set_debug_level_from_env()`` would).
    - ``threads``: torch intra-op threads per rank (default 1: N ranks share a few cores).
    - ``linger``: keep finished ranks alive until all are done, like ranks that go on with other work;
      by default a finished rank exits, as at the end of a script, and peers still waiting on it fail fast.
    - ``record``: record collectives and ``barrierlab.span`` phases for ``Run.timeline()``.
    - ``check``: raise :class:`~barrierlab.result.RankFailed` if any rank did not finish.
    """
    kwargs = dict(kwargs or {})
    deadline = timeout + DEFAULT_DEADLINE_MARGIN if deadline is None else deadline
    _check_inputs(fn, world_size, timeout, deadline, threads)
    payload = _pack(fn, tuple(args), kwargs)
    env = {str(k): str(v) for k, v in (env or {}).items()}

    with _lock:
        warm_up()
        try:
            _warm.wait_ready()
        except LaunchError:
            shutdown()
            warm_up(wait=True)
        index = CodeIndex().add((fn, args, kwargs))
        try:
            result = _launch(_warm, payload, world_size, float(timeout), float(deadline), env, threads, linger,
                             record, index)
        except KeyboardInterrupt:
            raise KeyboardInterrupt(f"barrierlab.run was interrupted; all {world_size} ranks were stopped") from None
    return result.raise_if_failed() if check else result


def _launch(warm, payload, world_size, timeout, deadline, env, threads, linger, record, index) -> Run:
    run_id = uuid.uuid4().hex
    run_dir = tempfile.mkdtemp(prefix="barrierlab-")
    t0 = time.monotonic()
    common = dict(run_dir=run_dir, world_size=world_size, payload=payload, timeout=timeout, env=env,
                  kernel_env=dict(os.environ),
                  threads=threads, linger=linger, record=record, t0=t0, kernel_pid=os.getpid(),
                  cwd=os.getcwd(), sys_path=list(sys.path))
    specs = [pickle.dumps(dict(common, rank=rank)) for rank in range(world_size)]
    exits: dict[int, tuple[int | None, int | None]] = {}
    stopped: set[int] = set()
    interrupted = False
    started = False
    pids: list[int] = []

    def pump(seconds: float) -> None:
        message = warm.receive(seconds)
        if message and message[0] == "exited" and message[1] == run_id:
            _, _, rank, _pid, code, sig = message
            exits[rank] = (code, sig)

    def signal_all(signum: int) -> None:
        warm.send(("signal", run_id, signum))

    def results_written() -> set[int]:
        return {r for r in range(world_size) if os.path.exists(os.path.join(run_dir, f"rank{r}.result"))}

    try:
        warm.send(("launch", run_id, specs))
        while not started:
            message = warm.receive(START_TIMEOUT)
            if message is None:
                raise LaunchError("the warm process did not start the ranks")
            started = message[0] == "started" and message[1] == run_id
            pids = message[2] if started else pids
        give_up = t0 + deadline
        while len(exits) < world_size and (remaining := give_up - time.monotonic()) > 0:
            pump(min(remaining, 0.02) if linger else remaining)
            if linger and len(results_written()) == world_size:
                break
        running = set(range(world_size)) - set(exits)
        if running:
            done = results_written() if linger else set()
            stopped = running - done
            if stopped:
                signal_all(signal.SIGUSR1)
                grace_end = time.monotonic() + STACK_GRACE
                while (remaining := grace_end - time.monotonic()) > 0 and len(exits) < world_size:
                    pump(remaining)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if len(exits) < world_size:  # deadline, interrupt or error: end every rank of this run, only them
            try:
                signal_all(signal.SIGKILL)
                give_up = time.monotonic() + 2.0
                while started and len(exits) < world_size and time.monotonic() < give_up:
                    pump(give_up - time.monotonic())
            except LaunchError:
                pass
        if interrupted or not started:
            shutil.rmtree(run_dir, ignore_errors=True)
    try:
        return collect(run_dir, world_size, t0, time.monotonic() - t0, exits, stopped, pids,
                       timeout=timeout, deadline=deadline, index=index, linger=linger)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
