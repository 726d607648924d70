"""Start the warm process (``_warm.py``) as early as possible: this module imports nothing heavy, so
``barrierlab/__init__.py`` can start it before the kernel itself imports torch, and both imports overlap."""

from __future__ import annotations

import os
import subprocess
import sys

#: The warm process started by ``start_early`` and not yet adopted by ``launch.warm_up``.
early: subprocess.Popen | None = None


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


def start_early() -> None:
    global early
    if early is None:
        early = start()


def adopt() -> subprocess.Popen | None:
    """The early warm process if it is still alive (then it is handed over only once), else None."""
    global early
    process, early = early, None
    if process is not None and process.poll() is not None:
        process.stdin.close()
        process.stdout.close()
        return None
    return process
