"""What runs inside one rank process: set up, init the gloo group, call the learner's function, report.

Everything a rank reports goes to its files in the run's private directory (``_protocol.RankFiles``),
so that nothing is lost when the rank is killed; its :class:`~barrierlab._protocol.Outcome` is written
last, atomically. The set-up phases are functions whose names ``stacks.py`` knows from the contract
(``_protocol.RANK_PHASES``), so a rank stopped in one of them is described in words.
"""

from __future__ import annotations

import faulthandler
import os
import select
import signal
import sys
import threading
import time
import traceback
from datetime import timedelta

import cloudpickle
import torch
import torch.distributed as dist

from barrierlab import record
from barrierlab._contain import RUN_MARKER
from barrierlab._protocol import Outcome, RankFiles, RankSpec, RunSpec, Status, clock_anchor

STACK_SIGNAL = signal.SIGUSR1


def loopback_interface() -> str | None:
    for _index, name in socket_interfaces():
        if name in ("lo", "lo0"):
            return name
    return None


def socket_interfaces() -> list[tuple[int, str]]:
    import socket

    try:
        return socket.if_nameindex()
    except OSError:
        return []


def _redirect(fd: int, path: str) -> None:
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(target, fd)
    os.close(target)


def _watch_parents(pids: list[int]) -> None:
    """Exit at once when the kernel or the warm process is gone (no orphans holding ports)."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            os._exit(75)
        except (AttributeError, OSError):
            fds = []
            break
    if fds:
        select.select(fds, [], [])
        os._exit(75)
    while True:  # no pidfd (macOS, old kernels): poll
        time.sleep(0.2)
        for pid in pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(75)


def _pickled(value: object) -> tuple[bytes | None, str]:
    """(pickle of value, "") or (None, why it cannot be pickled)."""
    try:
        return cloudpickle.dumps(value), ""
    except Exception as error:
        kind = type(value)
        return None, f"{kind.__module__}.{kind.__qualname__} ({type(error).__name__}: {error})"


def _save_flight_record(path: str) -> None:
    """Save torch's own flight recorder (the collectives this rank issued, including those made from C++,
    such as DDP's) for the diagnosis. A private API: any failure just means there is no record."""
    try:
        from torch._C._distributed_c10d import _dump_fr_trace_json

        data = _dump_fr_trace_json(includeCollectives=True)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
    except Exception:
        pass


def load_the_call(spec: RunSpec):
    """Unpickle (fn, args, kwargs): this imports the modules the learner's code needs. A large call was
    written once to a file, which each rank reads for itself (so each has its own objects)."""
    if spec.payload_path:
        with open(spec.payload_path, "rb") as f:
            return cloudpickle.load(f)
    return cloudpickle.loads(spec.payload)


def join_the_group(spec: RankSpec):
    store = dist.FileStore(spec.run.store_path, spec.run.options.world_size)
    dist.init_process_group("gloo", store=store, rank=spec.rank, world_size=spec.run.options.world_size,
                            timeout=timedelta(seconds=spec.run.options.timeout))
    return store


def wait_for_every_rank(store, world_size: int, timeout: float) -> None:
    """Wait, through the store (not a collective, so it never pairs with the learner's), until every
    rank's init_process_group has returned: a rank that finishes fast and exits must not break a peer's
    connection set-up."""
    if store.add("barrierlab/initialised", 1) == world_size:
        store.set("barrierlab/go", "1")
    store.wait(["barrierlab/go"], timedelta(seconds=timeout))


def call_the_function(fn, args, kwargs):
    return fn(*args, **kwargs)


def _set_environment(spec: RankSpec) -> None:
    options = spec.run.options
    os.chdir(spec.run.cwd)
    sys.path[:] = spec.run.sys_path
    os.environ.clear()  # the kernel's environment now, not the one the warm process started with
    os.environ.update(spec.run.kernel_env)
    os.environ.update({"RANK": str(spec.rank), "WORLD_SIZE": str(options.world_size),
                       "LOCAL_RANK": str(spec.rank), "LOCAL_WORLD_SIZE": str(options.world_size),
                       RUN_MARKER: spec.run.run_id})  # inherited by every program the rank starts
    loopback = loopback_interface()
    if loopback:
        os.environ["GLOO_SOCKET_IFNAME"] = loopback
    env = dict(options.env)
    os.environ.update(env)
    if "TORCH_DISTRIBUTED_DEBUG" in env:
        dist.set_debug_level_from_env()
    torch.set_num_threads(options.threads)


def _capture_output(files: RankFiles) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _redirect(1, files.stdout)
    _redirect(2, files.stderr)
    sys.stdout = sys.__stdout__  # the warm process pointed it at stderr to protect its message pipe
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)


def main(spec: RankSpec) -> int:
    """Run one rank; return its exit code. Everything it reports goes to its :class:`RankFiles`."""
    rank, options, files = spec.rank, spec.run.options, spec.files
    _capture_output(files)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    stack_file = open(files.stack, "w")
    faulthandler.register(STACK_SIGNAL, file=stack_file, all_threads=True)
    threading.Thread(
        target=_watch_parents, args=([spec.run.kernel_pid, os.getppid()],), daemon=True, name="barrierlab-watchdog"
    ).start()

    outcome = Outcome(rank=rank, world_size=options.world_size, status=Status.SETUP_FAILED, pid=os.getpid())
    in_fn = False
    try:
        _set_environment(spec)
        if options.record:
            record.start(files.events, rank=rank, t0=spec.run.t0)
        fn, args, kwargs = load_the_call(spec.run)
        store = join_the_group(spec)
        wait_for_every_rank(store, options.world_size, options.timeout)
        outcome.t_start = time.monotonic()
        in_fn = True
        value = call_the_function(fn, args, kwargs)
        outcome.status = Status.FINISHED
        outcome.value, outcome.send_error = _pickled(value)
        if outcome.value is None:
            outcome.status = Status.RAISED
            outcome.send_error = "its return value " + outcome.send_error
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        outcome.status, outcome.exit_code = Status.EXITED, code
    except BaseException as error:
        tb = error.__traceback__
        skip = 2 if in_fn else 0  # start the traceback at the learner's function, not at this launcher
        while skip and tb is not None and tb.tb_next is not None:
            tb, skip = tb.tb_next, skip - 1
        outcome.status = Status.RAISED if in_fn else Status.SETUP_FAILED
        outcome.error_type = f"{type(error).__module__}.{type(error).__qualname__}"
        outcome.message = str(error)
        outcome.traceback = "".join(traceback.format_exception(type(error), error, tb))
        outcome.exception, _ = _pickled(error)
    outcome.t_end = time.monotonic()
    outcome.clock = clock_anchor()
    record.stop()
    if options.record:
        _save_flight_record(files.flight)
    sys.stdout.flush()
    sys.stderr.flush()
    outcome.write(files.outcome)
    if options.linger:
        while True:  # like a rank that goes on with other work: the launcher ends it
            time.sleep(3600)
    return outcome.exit_code or 0
