"""What runs inside one rank process: set up, init the gloo group, call the learner's function, report.

Everything a rank reports goes to files in the run's private directory, so that nothing is lost
when the rank is killed: ``rankN.stdout``/``rankN.stderr`` (file descriptors 1 and 2, so C++ output
is captured too), ``rankN.events`` (the recorder), ``rankN.stack`` (faulthandler, on SIGUSR1) and
``rankN.result`` (written last, atomically).
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

STACK_SIGNAL = signal.SIGUSR1


def paths(run_dir: str, rank: int) -> dict[str, str]:
    stem = os.path.join(run_dir, f"rank{rank}")
    return {k: f"{stem}.{k}" for k in ("stdout", "stderr", "events", "stack", "result", "flight")}


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


def _describe_unsendable(value: object, error: BaseException) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__} ({type(error).__name__}: {error})"


def _write_result(path: str, result: dict) -> None:
    try:
        data = cloudpickle.dumps(result)
    except Exception as error:  # the return value or the exception cannot be pickled
        if "value" in result:
            result["send_error"] = "its return value " + _describe_unsendable(result.pop("value"), error)
        if "exception" in result:
            result["exception"] = None
        data = cloudpickle.dumps(result)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


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


def _all_initialised(store, world_size: int, timeout: float) -> None:
    """Wait, through the store (not a collective, so it never pairs with the learner's), until every
    rank's init_process_group has returned: a rank that finishes fast and exits must not break a peer's
    connection set-up."""
    if store.add("barrierlab/initialised", 1) == world_size:
        store.set("barrierlab/go", "1")
    store.wait(["barrierlab/go"], timedelta(seconds=timeout))


def main(spec: dict) -> int:
    rank, world_size = spec["rank"], spec["world_size"]
    files = paths(spec["run_dir"], rank)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _redirect(1, files["stdout"])
    _redirect(2, files["stderr"])
    sys.stdout = sys.__stdout__  # the warm process pointed it at stderr to protect its message pipe
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    stack_file = open(files["stack"], "w")
    faulthandler.register(STACK_SIGNAL, file=stack_file, all_threads=True)
    threading.Thread(
        target=_watch_parents, args=([spec["kernel_pid"], os.getppid()],), daemon=True, name="barrierlab-watchdog"
    ).start()

    result: dict = {"rank": rank, "t_fork": time.monotonic()}
    phase = "setup"
    try:
        os.chdir(spec["cwd"])
        sys.path[:] = spec["sys_path"]
        os.environ.clear()  # the kernel's environment now, not the one the warm process started with
        os.environ.update(spec["kernel_env"])
        os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank),
                           "LOCAL_WORLD_SIZE": str(world_size)})
        loopback = loopback_interface()
        if loopback:
            os.environ["GLOO_SOCKET_IFNAME"] = loopback
        os.environ.update(spec["env"])
        if "TORCH_DISTRIBUTED_DEBUG" in spec["env"]:
            dist.set_debug_level_from_env()
        torch.set_num_threads(spec["threads"])
        if spec["record"]:
            record.start(files["events"], rank=rank, t0=spec["t0"])
        fn, args, kwargs = cloudpickle.loads(spec["payload"])
        store = dist.FileStore(os.path.join(spec["run_dir"], "store"), world_size)
        dist.init_process_group(
            "gloo", store=store, rank=rank, world_size=world_size, timeout=timedelta(seconds=spec["timeout"])
        )
        _all_initialised(store, world_size, spec["timeout"])
        result["t_start"] = time.monotonic()
        phase = "fn"
        result["value"] = fn(*args, **kwargs)
        result["status"] = "finished"
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        result.update(status="exited", exit_code=code)
    except BaseException as error:
        tb = error.__traceback__
        if phase == "fn" and tb is not None and tb.tb_next is not None:
            tb = tb.tb_next  # start the traceback at the learner's function, not at this launcher
        result.update(
            status="raised" if phase == "fn" else "setup failed",
            exception=error,
            exception_type=f"{type(error).__module__}.{type(error).__qualname__}",
            message=str(error),
            traceback="".join(traceback.format_exception(type(error), error, tb)),
        )
    result["t_end"] = time.monotonic()
    record.stop()
    if spec["record"]:
        _save_flight_record(files["flight"])
    sys.stdout.flush()
    sys.stderr.flush()
    _write_result(files["result"], result)
    if spec["linger"]:
        while True:  # like a rank that goes on with other work: the launcher ends it
            time.sleep(3600)
    return result.get("exit_code", 0)
