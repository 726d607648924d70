"""The warm process: imports torch once, then forks rank processes on request.

Why not ``multiprocessing``'s forkserver: in a Jupyter kernel it re-imports ``ipykernel_launcher``
in every child (slow), it cannot report exit signals of grandchildren reliably, and it would be
shared with the learner's own multiprocessing code.  This one is small and does only this:

* it runs in its own session, so Jupyter's interrupt (SIGINT to the kernel's process group)
  never reaches it or the ranks;
* it forks only when asked, reaps its children and reports each exit status;
* it signals only its own, not-yet-reaped children (their PIDs cannot have been reused);
* it exits, killing its children, as soon as the parent's pipe closes (kernel died or restarted).

The messages and their framing are defined in ``_protocol.py``.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

from barrierlab._protocol import (
    Exited, Launch, Preloaded, Quit, RankSpec, Ready, RunSpec, SignalRanks, Started, receive, send,
)

#: Imported once here so that ranks, forked from this process, share them instead of each importing
#: them again (torch.distributed.checkpoint alone costs a rank about 2 s and 90 MB on 2 cores; DDP
#: imports torch._dynamo on construction, 2.4 s and 130 MB per rank).
#: Seconds without a launch after which the warm process preloads anyway (a kernel that waits before its first run).
PRELOAD_AFTER_IDLE = 1.0

PRELOAD = (
    "torch.nn", "torch.optim", "torch.nn.parallel", "torch._dynamo", "torch.distributed.checkpoint",
    "torch.distributed.algorithms.ddp_comm_hooks.default_hooks", "barrierlab.sync", "barrierlab.scenarios",
)


class Zygote:
    """Forks ranks on request (:class:`Launch`), reports their exits (:class:`Exited`), signals them."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.children: dict[int, tuple[str, int]] = {}  # pid -> (run id, rank)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)

    def serve(self, preload: tuple[str, ...] = ()) -> None:
        """Answer the kernel; import ``preload`` one module at a time whenever no request is waiting, starting
        after the first launch (or :data:`PRELOAD_AFTER_IDLE` seconds without one), so the first run is fast."""
        send(self.out_fd, Ready(os.getpid()))
        pending, launched = list(preload), False
        idle_since = time.monotonic()
        while True:
            timeout = None
            if pending:
                timeout = 0.0 if launched else max(PRELOAD_AFTER_IDLE - (time.monotonic() - idle_since), 0.0)
            readable, _, _ = select.select([self.in_fd, self.wake_r], [], [], timeout)
            if not readable and pending:
                if launched or time.monotonic() - idle_since >= PRELOAD_AFTER_IDLE:
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
            send(self.out_fd, Started(spec.run_id, pids))
        elif isinstance(message, SignalRanks):
            for pid, (owner, _rank) in list(self.children.items()):
                if owner == message.run_id:
                    try:
                        os.kill(pid, message.signum)
                    except ProcessLookupError:
                        pass

    def fork_rank(self, spec: RunSpec, rank: int) -> int:
        pid = os.fork()
        if pid == 0:
            self.become_rank(RankSpec(spec, rank))
        self.children[pid] = (spec.run_id, rank)
        return pid

    def become_rank(self, spec: RankSpec) -> None:
        code = 70
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (self.in_fd, self.out_fd, self.wake_r, self.wake_w):
                os.close(fd)
            from barrierlab import _rank

            code = _rank.main(spec)
        finally:
            os._exit(code)

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            run_id, rank = self.children.pop(pid, (None, None))
            if run_id is None:
                continue
            if os.WIFSIGNALED(status):
                code, sig = None, os.WTERMSIG(status)
            else:
                code, sig = os.waitstatus_to_exitcode(status), None
            send(self.out_fd, Exited(run_id, rank, pid, code, sig))

    def kill_all(self) -> None:
        for pid in list(self.children):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in list(self.children):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.children.clear()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = sys.stderr  # stray prints must not corrupt the message pipe

    import barrierlab._rank  # noqa: F401  (imports torch, torch.distributed, cloudpickle)

    Zygote(in_fd, out_fd).serve(PRELOAD)


def _preload(name: str) -> None:
    import importlib

    try:
        importlib.import_module(name)
    except Exception as error:  # a missing optional module must not stop the lab
        print(f"barrierlab: could not preload {name}: {error}", file=sys.stderr)


if __name__ == "__main__":
    main()
