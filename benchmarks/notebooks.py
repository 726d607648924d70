"""Time and peak memory of each notebook, run top to bottom the way nbval and a learner run it.

    python benchmarks/notebooks.py                      # every notebook in notebooks/
    python benchmarks/notebooks.py --cpus 1             # on one CPU, like a Binder pod
    python benchmarks/notebooks.py notebooks/05_*.ipynb

Each notebook is copied to a temp dir and executed there with nbclient (scripts/run_notebooks.py's
``execute``), so the repository's notebooks are never touched.  "peak MiB" is the largest PSS, sampled every
0.1 s, of the kernel plus all its descendants: barrierlab's warm process and the ranks.  "seconds" includes
starting the kernel and barrierlab's first warm-up, as a learner's first Run All does.

Exits 1 if any notebook peaks at >= 1024 MiB (Binder kills a pod above 2 GB, and the browser, JupyterLab
and a second kernel need the rest) or takes longer than 45 s, or fails to run.

``--cpus N`` pins this process to N of its allowed CPUs before anything starts; the kernel, the warm process
and the ranks inherit the affinity (the "cpus" column shows the largest CPU set any of them had).  That
mimics the CPU *time* of a Binder pod, not its appearance: Binder limits CPU with a cgroup quota, so there
``os.cpu_count()`` and the affinity still show every core of the host.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import run_notebooks  # noqa: E402  (scripts/ is not a package)

MAX_MIB = 1024
MAX_SECONDS = 45.0


def _family(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


class AffinityWatch:
    """Samples the CPU affinity of the kernel and its descendants while a notebook runs."""

    def __init__(self) -> None:
        self.largest: set[int] = set()
        self.processes = 0
        self._seen: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, parent: int) -> None:
        def loop() -> None:
            while not self._stop.wait(0.1):
                for proc in _family(parent)[1:]:
                    try:
                        cpus = set(proc.cpu_affinity())
                    except (psutil.NoSuchProcess, psutil.AccessDenied, AttributeError):
                        continue
                    if proc.pid not in self._seen:
                        self._seen.add(proc.pid)
                        self.processes += 1
                    if len(cpus) > len(self.largest):
                        self.largest = cpus

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()


def run_one(source: Path, workdir: Path) -> tuple[float, int, str, AffinityWatch]:
    """Execute a copy of ``source``; return (seconds, peak PSS bytes, error or "", affinity seen)."""
    folder = workdir / source.parent.name  # the whole folder: 04 lints 03, 08 runs capstone/train.py
    if not folder.exists():
        shutil.copytree(source.parent, folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    copy = folder / source.name
    watch = AffinityWatch()
    watch.start(os.getpid())  # the kernel is our child; the warm process and the ranks are its descendants
    started = time.monotonic()
    try:
        seconds, peak = run_notebooks.execute(copy)
        return seconds, peak, "", watch
    except Exception as error:  # report it in the table, go on with the next notebook
        return time.monotonic() - started, 0, f"{type(error).__name__}: {str(error).splitlines()[0][:100]}", watch
    finally:
        watch.stop()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--cpus", type=int, help="pin to this many CPUs first (1 mimics Binder)")
    parser.add_argument("--max-mib", type=float, default=MAX_MIB)
    parser.add_argument("--max-seconds", type=float, default=MAX_SECONDS)
    args = parser.parse_args(argv)

    if args.cpus:
        allowed = sorted(os.sched_getaffinity(0))
        if args.cpus > len(allowed):
            parser.error(f"--cpus {args.cpus}: only {len(allowed)} CPUs are available")
        os.sched_setaffinity(0, allowed[: args.cpus])
    paths = [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not paths:
        print("no notebooks found", file=sys.stderr)
        return 1

    print(
        f"# {platform.node()}: {psutil.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.0f} GiB; "
        f"this process on CPUs {sorted(os.sched_getaffinity(0))}; Python {platform.python_version()}; "
        f"{time.strftime('%Y-%m-%d')}"
    )
    print(f"{'notebook':<42} {'seconds':>8} {'peak MiB':>9} {'cpus':>5} {'procs':>5}  verdict")
    failed = False
    with tempfile.TemporaryDirectory(prefix="barrierlab-bench-") as tmp:
        for path in paths:
            seconds, peak, error, watch = run_one(path, Path(tmp))
            mib = peak / 2**20
            problems = [error] if error else []
            if mib >= args.max_mib:
                problems.append(f"peak >= {args.max_mib:.0f} MiB")
            if seconds > args.max_seconds:
                problems.append(f"took > {args.max_seconds:.0f} s")
            failed |= bool(problems)
            print(
                f"{path.name:<42} {seconds:8.1f} {mib:9.0f} {len(watch.largest):>5} {watch.processes:>5}  "
                f"{'; '.join(problems) or 'ok'}",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
