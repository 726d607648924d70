"""The warm process: imports torch once, then forks rank processes on request.

Why not ``multiprocessing``'s forkserver: in a Jupyter kernel it re-imports ``ipykernel_launcher``
in every child (slow), it cannot report exit signals of grandchildren reliably, and it would be
shared with the learner's own multiprocessing code.  This one is small and does only this:

* it runs in its own session, so Jupyter's interrupt (SIGINT to the kernel's process group)
  never reaches it or the ranks;
* it forks only when asked, reaps its children and reports each exit status;
* it signals only its own, not-yet-reaped children (their PIDs cannot have been reused);
* it exits, killing its children, as soon as the parent's pipe closes (kernel died or restarted);
* it is a child subreaper (``_contain``): when every rank of a run has ended, it kills whatever the ranks
  started (however it detached) before it reports the run :class:`Swept`; ranks are SIGKILLed by the kernel
  if it dies (``PR_SET_PDEATHSIG``), each leads its own session, and it signals them through pidfds.

The messages and their framing are defined in ``_protocol.py``.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

from barrierlab import _contain
from barrierlab._protocol import (
    Exited,
    Launch,
    Preloaded,
    Quit,
    RankSpec,
    Ready,
    RunSpec,
    SignalRanks,
    Started,
    Swept,
    receive,
    send,
)

#: Imported once here so that ranks, forked from this process, share them instead of each importing
#: them again (torch.distributed.checkpoint alone costs a rank about 2 s and 90 MB on 2 cores; DDP
#: imports torch._dynamo on construction, 2.4 s and 130 MB per rank).
#: Seconds without a launch after which the warm process preloads anyway (a kernel that waits before its first run).
PRELOAD_AFTER_IDLE = 1.0
#: Preloading waits while the kernel uses at least this share of a CPU (its own torch import, at the start, is
#: what the first cell waits for; two imports at once slow each other by ~0.2 s on 2 cores), measured over
#: windows of KERNEL_WINDOW seconds, but for at most KERNEL_WAIT_MAX seconds in all.
KERNEL_BUSY_SHARE, KERNEL_WINDOW, KERNEL_WAIT_MAX = 0.5, 0.2, 10.0

PRELOAD = (
    "torch.nn",
    "torch.optim",
    "torch.nn.parallel",
    "torch._dynamo",
    "torch.distributed.checkpoint",
    "torch.distributed.algorithms.ddp_comm_hooks.default_hooks",
    "barrierlab.sync",
    "barrierlab.scenarios",
)
#: Environment variable naming more modules to preload, comma-separated (``transformers,datasets``): libraries
#: the learner's own modules import, which each rank would otherwise import again in every run. Only modules
#: safe to fork after import (that start no thread when imported) belong there.
PRELOAD_VARIABLE = "BARRIERLAB_PRELOAD"


def modules_to_preload(environ=os.environ) -> tuple[str, ...]:
    """:data:`PRELOAD`, then the modules ``BARRIERLAB_PRELOAD`` names (a name that is not a dotted module name
    is reported on stderr and skipped)."""
    extra = []
    for name in environ.get(PRELOAD_VARIABLE, "").split(","):
        name = name.strip()
        if not name:
            continue
        if all(part.isidentifier() for part in name.split(".")):
            extra.append(name)
        else:
            print(f"barrierlab: {PRELOAD_VARIABLE}: {name!r} is not a module name; skipped", file=sys.stderr)
    return PRELOAD + tuple(dict.fromkeys(n for n in extra if n not in PRELOAD))


class WarmProcess:
    """Forks ranks on request (:class:`Launch`), reports their exits (:class:`Exited`), signals them."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.children: dict[int, tuple[str, int]] = {}  # pid -> (run id, rank)
        self.pidfds: dict[int, int] = {}  # pid -> pidfd, for each unreaped rank
        _contain.become_subreaper()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)

    def serve(self, preload: tuple[str, ...] = ()) -> None:
        """Answer the kernel; import ``preload`` one module at a time whenever no request is waiting and no rank
        is alive (an import blocks this loop, and with it the exit reports the kernel waits for), starting after
        the first run (or :data:`PRELOAD_AFTER_IDLE` seconds without one), so the first run is fast."""
        send(self.out_fd, Ready(os.getpid()))
        pending, launched = list(preload), False
        idle_since = time.monotonic()
        kernel = _Activity(os.getppid(), give_up_after=KERNEL_WAIT_MAX)
        while True:
            timeout = None
            may_preload = bool(pending) and not self.children
            if may_preload:
                due = 0.0 if launched else PRELOAD_AFTER_IDLE - (time.monotonic() - idle_since)
                timeout = max(due, kernel.next_verdict_in(), 0.0)
            readable, _, _ = select.select([self.in_fd, self.wake_r], [], [], timeout)
            if not readable and may_preload:
                if (launched or time.monotonic() - idle_since >= PRELOAD_AFTER_IDLE) and not kernel.busy():
                    _preload(pending.pop(0))
                    if not pending:
                        send(self.out_fd, Preloaded())
                continue
            if self.wake_r in readable:
                os.read(self.wake_r, 4096)
            self.reap()
            if self.in_fd in readable:
                message = receive(self.in_fd)
                if message is None or isinstance(message, Quit):
                    self.kill_all()
                    return
                self.handle(message)
                launched = launched or isinstance(message, Launch)

    def handle(self, message) -> None:
        if isinstance(message, Launch):
            spec = message.spec
            pids = tuple(self.fork_rank(spec, rank) for rank in range(spec.options.world_size))
            send(self.out_fd, Started(spec.run_id, pids, tuple(_contain.start_time(p) or 0 for p in pids)))
        elif isinstance(message, SignalRanks):
            for pid, (owner, _rank) in list(self.children.items()):
                if owner == message.run_id:
                    self.signal_rank(pid, message.signum)

    def signal_rank(self, pid: int, signum: int) -> None:
        """Signal an unreaped rank (its PID cannot have been reused); SIGKILL takes its session's process
        group with it."""
        fd = self.pidfds.get(pid)
        if fd is None or not _contain.signal_pidfd(fd, signum):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass
        if signum == signal.SIGKILL:
            try:
                os.killpg(pid, signal.SIGKILL)  # the rank's own group: it is still unreaped, so still ours
            except (ProcessLookupError, PermissionError):
                pass

    def fork_rank(self, spec: RunSpec, rank: int) -> int:
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            self.become_rank(RankSpec(spec, rank), parent)
        self.children[pid] = (spec.run_id, rank)
        try:
            self.pidfds[pid] = os.pidfd_open(pid)
        except (OSError, AttributeError):
            pass
        return pid

    def become_rank(self, spec: RankSpec, parent: int) -> None:
        code = 70
        try:
            _contain.die_with_parent(parent)
            try:
                os.setsid()  # its own session and process group: what it starts can be found and killed
            except OSError:
                pass
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (self.in_fd, self.out_fd, self.wake_r, self.wake_w, *self.pidfds.values()):
                os.close(fd)
            from barrierlab import _rank

            code = _rank.main(spec)
        finally:
            os._exit(code)

    def reap(self) -> None:
        """Reap every ended child (ranks, and orphans adopted as subreaper); report ranks' exits; when a
        run's last rank has ended, kill what its ranks left running and report the run swept."""
        ended_runs = set()
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            run_id, rank = self.children.pop(pid, (None, None))
            fd = self.pidfds.pop(pid, None)
            if fd is not None:
                os.close(fd)
            if run_id is None:
                continue  # an adopted orphan
            if os.WIFSIGNALED(status):
                code, sig = None, os.WTERMSIG(status)
            else:
                code, sig = os.waitstatus_to_exitcode(status), None
            send(self.out_fd, Exited(run_id, rank, pid, code, sig))
            ended_runs.add(run_id)
        live_runs = {run_id for run_id, _ in self.children.values()}
        for run_id in ended_runs - live_runs:
            send(self.out_fd, Swept(run_id, self.sweep()))

    def sweep(self) -> int:
        """Kill every descendant but the ranks of runs still going (and what they started); the adopted
        orphans are reaped by the next :meth:`reap` (their SIGCHLD wakes the loop)."""
        return _contain.kill_descendants(os.getpid(), keep=set(self.children))

    def kill_all(self) -> None:
        for pid in list(self.children):
            self.signal_rank(pid, signal.SIGKILL)
        for pid in list(self.children):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.children.clear()
        _contain.kill_descendants(os.getpid())


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = sys.stderr  # stray prints must not corrupt the message pipe

    import barrierlab._rank  # noqa: F401  (imports torch, torch.distributed, cloudpickle)

    warm = WarmProcess(in_fd, out_fd)
    try:
        warm.serve(modules_to_preload())
    except BrokenPipeError:  # the kernel is gone (e.g. shut down while this process was still importing)
        warm.kill_all()


class _Activity:
    """Whether a process (the kernel) is busy on the CPU, judged over windows of :data:`KERNEL_WINDOW` s;
    after ``give_up_after`` seconds of being asked, it answers "not busy" for good."""

    def __init__(self, pid: int, give_up_after: float) -> None:
        self.pid = pid
        self.at = time.monotonic()
        self.ticks = _contain.cpu_ticks(pid)
        self.verdict = self.ticks is not None  # busy until a first window says otherwise
        self.asked_since: float | None = None
        self.give_up_after = give_up_after

    def next_verdict_in(self) -> float:
        """Seconds until a busy verdict can change (0 when not busy: the next :meth:`busy` decides)."""
        return max(self.at + KERNEL_WINDOW - time.monotonic(), 0.0) if self.verdict else 0.0

    def busy(self) -> bool:
        now = time.monotonic()
        self.asked_since = self.asked_since or now
        if now - self.asked_since >= self.give_up_after:
            return False
        if now - self.at >= KERNEL_WINDOW:
            ticks = _contain.cpu_ticks(self.pid)
            if ticks is None or self.ticks is None:
                self.verdict = False
            else:
                self.verdict = (ticks - self.ticks) / os.sysconf("SC_CLK_TCK") >= KERNEL_BUSY_SHARE * (now - self.at)
            self.ticks, self.at = ticks, now
        return self.verdict


def _preload(name: str) -> None:
    import importlib

    try:
        importlib.import_module(name)
    except Exception as error:  # a missing optional module must not stop the lab
        print(f"barrierlab: could not preload {name}: {error}", file=sys.stderr)


if __name__ == "__main__":
    main()
