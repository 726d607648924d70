"""Stress barrierlab.run with hostile rank code, run after run, and count what it leaves behind.

    python benchmarks/stress.py [--runs 500] [--seed 0] [--deadline 1.5]

Each run draws one kind (deadlock, exception, os._exit, SIGKILL, detached grandchildren, a span flood, a
50 MB tensor argument, a random interrupt: KeyboardInterrupt delivered to the calling thread by a timer with
``signal.pthread_kill(main, SIGINT)``, or a plain run) and a world size of 1-6. At the end it prints:

- runs: how many ran, by kind, and how many were interrupted;
- processes left: descendants of this process other than the warm process, processes carrying a run's
  environment marker (``BARRIERLAB_RUN_ID``) or in a rank's session, and the grandchildren the ranks
  reported starting (the renamed daemons included), still running 1 s after the last run;
- temp dirs left: this process's run folders; run cgroups left: this process's (where they are made);
- worst overshoot: the largest (time the call took - the run's deadline), over every run; and the same counted
  from the start of the ranks, as the deadline is (a call after a rank killed the warm process first waits
  for a new one to import torch and the modules it preloads: seconds, before the deadline starts);
- kernel memory growth: this process's RSS after the last run minus after the warm-up runs.

Targets: 0, 0, <= 1 s, <= 100 MB.
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

import psutil
import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab import _contain, launch
from barrierlab._protocol import run_dir_prefix

KINDS = ["ok", "deadlock", "raise", "os_exit", "sigkill", "detached", "flood", "big_argument", "interrupt"]
#: Attacks on what reads a rank's output (issue 21): the recorder's descriptor reused, a value slower to
#: unpickle than the deadline, a value nested a million lists deep, an error message of 40,000 "[", three
#: span names of 8 MB, a daemon forked (no exec) into its own session before the rank kills the warm process.
KINDS += ["steal_events_fd", "slow_value", "deep_value", "brackets", "huge_spans", "kill_warm_with_daemon"]
#: attack4 A3 and issue 21's containment hole: a chain of processes that forks and exits every millisecond, each
#: in a new session (bounded: 10 s); a daemon forked without exec that renames itself before the rank kills the
#: warm process (it writes its PID into the folder given, so that it can be found).
KINDS += ["hop_chain", "renamed_daemon"]

HOPPER = """
import os, time
end = time.monotonic() + 10
while time.monotonic() < end:
    if os.fork():
        os._exit(0)
    os.setsid()
"""


def start_grandchildren() -> list[int]:
    """A Popen child, one in a new session, one that ignores SIGTERM, and a double-forked Python daemon."""
    pids = [
        subprocess.Popen(["sleep", "1000"]).pid,
        subprocess.Popen(["sleep", "1000"], start_new_session=True).pid,
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(1000)",
            ],
            start_new_session=True,
        ).pid,
    ]
    read_fd, write_fd = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(write_fd, str(os.getpid()).encode())
            while True:
                time.sleep(1)
        os._exit(0)
    os.close(write_fd)
    pids.append(int(os.read(read_fd, 32)))
    os.close(read_fd)
    return pids


def _slow_list(seconds: float) -> list:
    time.sleep(seconds)
    return [1, 2, 3]


def _deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


class SlowValue:
    def __reduce__(self):
        return _slow_list, (5.0,)


class DeepValue:
    def __reduce__(self):
        return _deep_list, (1_000_000,)


def _fork_daemon(rename_into: str = "") -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            if rename_into:
                import ctypes

                ctypes.CDLL(None).prctl(_contain.PR_SET_NAME, ctypes.c_char_p(b"innocent"), 0, 0, 0)
                open(os.path.join(rename_into, f"daemon-{os.getpid()}"), "w").close()
            while True:
                time.sleep(1)
        os._exit(0)
    os.wait()


def hostile(kind: str, payload=None):
    rank = dist.get_rank()
    if kind == "steal_events_fd":
        for fd in os.listdir("/proc/self/fd"):
            try:
                if os.readlink(f"/proc/self/fd/{fd}").endswith(".events"):
                    os.close(int(fd))
                    os.dup2(os.open(os.devnull, os.O_WRONLY), int(fd))
            except OSError:
                pass
    if kind == "slow_value":
        return SlowValue()
    if kind == "deep_value":
        return DeepValue()
    if kind == "brackets" and rank == 0:
        raise ValueError("[" * 40_000)
    if kind == "huge_spans":
        for _ in range(3):
            with bl.span("x" * 8_000_000):
                pass
    if kind in ("kill_warm_with_daemon", "renamed_daemon") and rank == 0:
        before = len(os.listdir(payload)) if kind == "renamed_daemon" else 0
        _fork_daemon(payload if kind == "renamed_daemon" else "")
        give_up = time.monotonic() + 5
        while kind == "renamed_daemon" and len(os.listdir(payload)) == before and time.monotonic() < give_up:
            time.sleep(0.005)  # until the renamed daemon has written its PID
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(1000)
    if kind == "hop_chain" and rank == 0:
        subprocess.Popen([sys.executable, "-c", HOPPER])
        time.sleep(0.1)
    if kind == "deadlock" and rank == 0:
        dist.barrier()
    if kind == "raise" and rank == dist.get_world_size() - 1:
        raise RuntimeError("boom")
    if kind == "os_exit" and rank == 0:
        os._exit(3)
    if kind == "sigkill" and rank == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "detached":
        pids = start_grandchildren()
        dist.barrier()
        return pids
    if kind == "flood":
        while True:
            with bl.span("x"):
                pass
    if kind == "big_argument":
        payload.add_(rank)  # in place: stays this rank's
        return float(payload[0])
    if kind == "interrupt":
        time.sleep(1000)
    dist.barrier()
    return rank


#: The ids of this process's runs: other processes of this user (other kernels, other test sessions) carry
#: run markers and names too, and must not be counted as this benchmark's leftovers.
RUN_IDS: set[str] = set()
_group_init = launch._RunningGroup.__init__


def _note_run_id(group, warm, spec) -> None:
    RUN_IDS.add(spec.run_id)
    _group_init(group, warm, spec)


launch._RunningGroup.__init__ = _note_run_id


def leftovers(rank_pids: set[int], grandchildren: set[int], since: int) -> list[str]:
    """Processes that came from a run of this process and still run."""
    me = psutil.Process()
    warm = launch._warm.process.pid if launch._warm is not None and launch._warm.alive() else None
    found = {}
    for child in me.children(recursive=True):
        try:
            pooled = child.ppid() == warm and child.name() == _contain.POOLED_NAME.decode()  # waits for a run
            if child.pid != warm and not pooled and child.status() != psutil.STATUS_ZOMBIE:
                found[child.pid] = f"{child.pid} descendant {child.name()}"
        except psutil.NoSuchProcess:
            pass
    markers = {f"{_contain.RUN_MARKER}={run_id}".encode() for run_id in RUN_IDS}
    names = {_contain.process_name(run_id).decode() for run_id in RUN_IDS}
    uid = os.getuid()
    for pid in psutil.pids():
        try:
            process = psutil.Process(pid)
            if process.uids().real != uid or process.status() == psutil.STATUS_ZOMBIE:
                continue
            stat = _contain._stat(pid)
            if stat is None or stat[2] < since:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                marked = any(item in markers for item in f.read().split(b"\0"))
            named = process.name() in names  # a rank's name, kept by what it forks (_contain.mark_process)
            if marked or named or stat[1] in rank_pids or pid in grandchildren or pid in rank_pids:
                found.setdefault(pid, f"{pid} from a run: {process.name()}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            pass
    return sorted(found.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deadline", type=float, default=1.5, help="deadline of each run, seconds")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    me = psutil.Process()
    bl.warm_up(wait=True)
    since = _contain.ticks_now()
    big = torch.zeros(50 * 2**20 // 4)  # 50 MB
    daemons = tempfile.mkdtemp(prefix="barrierlab-stress-daemons-")
    payloads = {"big_argument": big, "renamed_daemon": daemons}
    main_thread = threading.main_thread().ident
    for kind in KINDS:  # warm-up: every import every kind needs
        if kind not in ("interrupt", "kill_warm_with_daemon", "renamed_daemon"):
            bl.run(hostile, 2, args=(kind, payloads.get(kind)), timeout=1, deadline=options.deadline)
    rss_start = me.memory_info().rss
    counts, interrupted, worst, worst_kind = Counter(), 0, -1e9, ""
    worst_launched, worst_launched_kind = -1e9, ""
    launched = []  # when each call's ranks were started (the warm process answered: the deadline counts from there)
    original_start = launch._RunningGroup.start

    def timed_start(group):
        original_start(group)
        launched.append(time.monotonic())

    launch._RunningGroup.start = timed_start
    rank_pids: set[int] = set()
    grandchildren: set[int] = set()
    started_all = time.monotonic()
    for i in range(options.runs):
        kind = rng.choice(KINDS)
        world = rng.randint(1, 6)
        counts[kind] += 1
        deadline = options.deadline
        timer = None
        if kind == "interrupt":
            timer = threading.Timer(rng.uniform(0.0, deadline), signal.pthread_kill, (main_thread, signal.SIGINT))
        started = time.monotonic()
        launched.clear()
        try:
            try:
                if timer is not None:
                    timer.start()
                run = bl.run(hostile, world, args=(kind, payloads.get(kind)), timeout=1, deadline=deadline)
            finally:
                if timer is not None:
                    timer.cancel()
                    timer.join()
                time.sleep(0)
            repr(run), run._repr_html_()  # a display must be bounded whatever the ranks returned
            rank_pids |= {r.pid for r in run.ranks if r.pid}
            for value in run.values:
                if kind == "detached" and isinstance(value, list):
                    grandchildren |= set(value)
        except KeyboardInterrupt:
            interrupted += 1
        except launch.LaunchError:
            counts["warm process lost"] += 1
        ended = time.monotonic()
        elapsed = ended - started
        if elapsed - deadline > worst:
            worst, worst_kind = elapsed - deadline, kind
        if launched and ended - launched[-1] - deadline > worst_launched:
            worst_launched, worst_launched_kind = ended - launched[-1] - deadline, kind
        if (i + 1) % 50 == 0:
            print(
                f"  {i + 1} runs, {time.monotonic() - started_all:.0f} s, worst overshoot {worst:+.2f} s "
                f"({worst_kind}), RSS {me.memory_info().rss / 2**20:.0f} MiB",
                flush=True,
            )
    rss_end = me.memory_info().rss
    time.sleep(1.0)
    grandchildren |= {int(name.split("-")[1]) for name in os.listdir(daemons)}
    left = leftovers(rank_pids, grandchildren, since)
    shutil.rmtree(daemons, ignore_errors=True)
    prefix = run_dir_prefix(os.getpid(), launch._my_start())
    dirs = glob.glob(os.path.join(tempfile.gettempdir(), prefix + "*"))
    bl.shutdown()  # the warm process holds the next run's cgroup, made ahead: what is left is counted after it
    cgroups = _contain.stale_cgroups(lambda name: name.startswith(prefix))
    print(
        f"runs: {options.runs} ({', '.join(f'{k} {n}' for k, n in sorted(counts.items()))}; "
        f"{interrupted} interrupted) in {time.monotonic() - started_all:.0f} s"
    )
    print(f"processes left: {len(left)}" + "".join(f"\n  {line}" for line in left))
    print(f"temp dirs left: {len(dirs)}" + "".join(f"\n  {d}" for d in dirs))
    made = "made" if _contain.run_cgroups_available() else f"not made: {_contain.cgroup_unavailable}"
    print(f"run cgroups left: {len(cgroups)} (run cgroups {made})" + "".join(f"\n  {c}" for c in cgroups))
    print(
        f"worst overshoot of the deadline: {worst:+.2f} s ({worst_kind}); counted from the start of the ranks, "
        f"as the deadline is: {worst_launched:+.2f} s ({worst_launched_kind})"
    )
    print(
        f"kernel memory growth: {(rss_end - rss_start) / 2**20:+.1f} MiB "
        f"(RSS {rss_start / 2**20:.0f} -> {rss_end / 2**20:.0f} MiB)"
    )


if __name__ == "__main__":
    main()
