"""Start the warm process (``_warm.py``) as early as possible: this module imports nothing heavy, so
``barrierlab/__init__.py`` can start it before the kernel itself imports torch, and both imports overlap."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

#: The warm process started by ``start_early`` and not yet adopted by ``launch.warm_up``.
early: subprocess.Popen | Forked | None = None


def start() -> subprocess.Popen:
    """A new warm process, in its own session (Jupyter's interrupt never reaches it), talking over two pipes."""
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bootstrap = f"import sys; sys.path.insert(0, {package_parent!r}); from barrierlab._warm import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", bootstrap],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
        cwd=None if _cwd_exists() else "/",
    )


def _cwd_exists() -> bool:
    """Whether this process's working folder still exists: in a removed one, torch cannot even be imported
    (oneMKL: "Cannot load libtorch_cpu.so"), so the warm process starts in ``/`` and each rank enters the
    kernel's folder through /proc (``launch.kernel_cwd``)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


class Forked:
    """What :func:`fork_here` starts, with the part of ``subprocess.Popen``'s interface the launcher uses:
    ``pid``, ``stdin``/``stdout`` (the pipes), ``poll``, ``wait`` and ``kill``."""

    def __init__(self, pid: int, to_fd: int, from_fd: int) -> None:
        self.pid = pid
        self.args = f"barrierlab's warm process, forked from {os.getpid()}"
        self.stdin = os.fdopen(to_fd, "wb")
        self.stdout = os.fdopen(from_fd, "rb")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: it is gone
                self.returncode = -signal.SIGKILL
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        give_up = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if give_up is not None and time.monotonic() >= give_up:
                raise subprocess.TimeoutExpired(self.args, timeout)  # type: ignore[arg-type]
            time.sleep(0.005)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        if self.poll() is None:  # our own unreaped child: its PID cannot have been reused
            os.kill(self.pid, signal.SIGKILL)


def fork_here() -> Forked:
    """The warm process forked from this process once it has imported what the ranks need (torch). For
    ``barrierlab run``: a command-line process is no kernel, so it can serve as the warm process's image, and
    the machine imports torch once instead of twice at the same time (the issue-21 script-runner target).
    The child leads its own session, talks over two pipes at descriptors 0 and 1 as :func:`start`'s does, and
    never returns: ``_warm.main`` ends with ``os._exit``."""
    import fcntl

    import barrierlab._rank  # noqa: F401  (torch, torch.distributed: what the ranks use)

    ends = [os.pipe(), os.pipe()]
    # out of the way of 0 and 1 (a process started with its standard streams closed gets them from os.pipe)
    (in_r, in_w), (out_r, out_w) = [tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in pair) for pair in ends]
    for pair in ends:
        for fd in pair:
            os.close(fd)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the warm process
        try:
            os.setsid()
            os.dup2(in_r, 0)
            os.dup2(out_w, 1)
            for fd in (in_r, in_w, out_r, out_w):
                os.close(fd)
            if not _cwd_exists():
                os.chdir("/")
            from barrierlab._warm import main

            main()
        finally:
            os._exit(70)
    os.close(in_r)
    os.close(out_w)
    return Forked(pid, in_w, out_r)


def fork_early() -> None:
    """Hand :func:`fork_here`'s warm process to the launcher's next ``warm_up``; in a process with other threads
    (``main(["run", ...])`` called from a kernel or a test runner) a fresh one as :func:`start` makes it: a fork
    copies only the forking thread, and a lock another thread held would stay held in the warm process."""
    import threading

    global early
    if early is None:
        early = fork_here() if threading.active_count() == 1 else start()


def start_early() -> None:
    global early
    if early is None:
        early = start()


def adopt() -> subprocess.Popen | Forked | None:
    """The early warm process if it is still alive (then it is handed over only once), else None."""
    global early
    process, early = early, None
    if process is not None and process.poll() is not None:
        process.stdin.close()
        process.stdout.close()
        return None
    return process
