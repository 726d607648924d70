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

import fcntl
import gc
import math
import os
import signal
import sys
import time

from barrierlab import _contain, _files, _protocol, _segments
from barrierlab._contain import libc
from barrierlab._protocol import (
    SEAL_KEY_SIZE,
    WRITTEN_PAGES_FILE,
    Become,
    Exited,
    Launch,
    LaunchFailed,
    Preloaded,
    PreloadNow,
    ProtocolError,
    Quit,
    RankSpec,
    Ready,
    RunSpec,
    SignalRanks,
    Started,
    Swept,
    frame,
    gone_dir_prefix,
    receive,
    run_dir_prefix,
    send,
)

#: Imported once here so that ranks, forked from this process, share them instead of each importing
#: them again (torch.distributed.checkpoint alone costs a rank about 2 s and 90 MB on 2 cores; DDP
#: imports torch._dynamo on construction, 2.4 s and 130 MB per rank).
#: Preloading imports one module at a time, and a run asked for during an import waits for it (up to 2.5 s for
#: torch._dynamo on a busy machine): it starts only once the kernel has been idle this many seconds (a learner
#: reading, not one running cells back to back), looked at every KERNEL_LOOK seconds. "Idle": neither running
#: nor runnable nor waiting on a disk at each look, and under KERNEL_BUSY_SHARE of a CPU between looks. A busy
#: kernel on a loaded machine is starved of CPU, so its CPU share alone said "idle" while it imported matplotlib
#: (measured at load 5.5: the first run of a fresh warm process waited 2.3 s behind torch._dynamo).
#: After KERNEL_WAIT_MAX seconds of waiting it preloads anyway (Run All, nbval: DDP runs need torch._dynamo).
PRELOAD_AFTER_IDLE = 1.0
#: Seconds to wait, once the kernel's pipe has closed, for the kernel to be gone (this process re-parented)
#: before deciding it still lives (it closed the pipe to replace this process) and leaving its folders alone.
REPARENT_WAIT = 1.0
KERNEL_BUSY_SHARE, KERNEL_LOOK, KERNEL_WAIT_MAX = 0.5, 0.1, 10.0

#: How long the warm process waits, in all, for the ranks just forked to hand over their keys (each does so
#: first thing: milliseconds); well within the kernel's wait for :class:`Started` (``launch.START_ANSWER_TIMEOUT``).
KEY_TIMEOUT = 2.0

#: Most ranks kept forked ahead of time (the pool holds as many as the last run had, up to this).
POOL_MAX = 8
#: How long the warm process tries to hand a pooled rank its run before forking a fresh rank instead.
HAND_OVER_TIMEOUT = 0.5
#: Seconds after a run is swept before the pool is refilled: the kernel is still reading the run (a refill forks
#: and starts as many processes as the run had, on the same cores).
REFILL_AFTER = 0.02
#: Pipe buffer asked for each pooled rank's spec pipe, so that a whole spec is written at once.
SPEC_PIPE_SIZE = 1 << 20
#: Rank 0 of a run, if it was pooled, lists the pages it copied from this process (``_rank.list_written_pages``)
#: until a listing has been read (LEARN_FIRST tries at most), then in every LEARN_EVERY-th run; the ranks pooled
#: after it copy them while they wait (``_rank.copy_ahead``). A listing costs that rank 5-15 ms as it ends.
LEARN_FIRST, LEARN_EVERY = 3, 32
#: Most memory a pooled rank copies ahead (a run of the lab copies 4-6 MiB; the listing is a rank's to write).
COPY_AHEAD_MAX = 32 << 20
#: Longest listing read.
LISTING_MAX = 1 << 20

PRELOAD = (
    "torch.nn",
    "torch.optim",
    "torch.nn.parallel",
    "torch._dynamo",
    "torch.distributed.checkpoint",
    "torch.distributed._functional_collectives",
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
    """Forks ranks on request (:class:`Launch`), reports their exits (:class:`Exited`), signals them.

    Ranks ready before they are asked: once its modules are preloaded and no run is going, it forks a pool of
    ranks (as many as the last run had) that wait, each in its own session and already holding its key, for a
    :class:`Become` on a pipe of its own; a launch hands each pooled rank its run instead of forking it (a fork
    of this process costs 7-15 ms per rank, one after another). A pooled rank runs nothing of the learner's
    before it is handed a run; one that died, was stopped, or does not take its run within
    :data:`HAND_OVER_TIMEOUT` is killed and a fresh rank forked instead. Its key is read only at the launch,
    from the pipe only it held, as for a fresh rank; the pool is refilled only when no run is going."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.children: dict[int, tuple[str, int]] = {}  # pid -> (run id, rank)
        self.pidfds: dict[int, int] = {}  # pid -> pidfd, for each unreaped rank
        self.eager = False  # preload without waiting for the kernel to be idle (PreloadNow)
        self.kernel = (os.getppid(), _contain.start_time(os.getppid()))  # (pid, start time) of the kernel
        self.run_dirs: set[str] = set()  # the folders of the runs this process has started
        self.key_fds: list[int] = []  # read ends of the key pipes of the ranks being forked (see take_keys)
        self.pool: dict[int, tuple[int, int]] = {}  # pooled rank's pid -> (its spec pipe, its key pipe)
        self.pool_size = 0  # the last run's world size (up to POOL_MAX): how many ranks the pool holds
        self.name = _contain.process_comm(os.getpid()) or b"python"  # its own name, given back after each fork
        self.cgroups: dict[str, str] = {}  # run id -> the run's cgroup, until the run is swept
        self.next_cgroup = ""  # the next run's cgroup (RunSpec.next_cgroup): where pooled ranks wait
        self.next_store_port = 0  # the next run's store (RunSpec.next_store_port): pooled ranks connect to it
        self.pooled_in: dict[int, str] = {}  # pooled rank's pid -> the cgroup it was moved into
        self.swept_at = -math.inf  # when the last run was reported swept (the pool is refilled REFILL_AFTER later)
        self.launches = 0  # runs asked for so far
        self.listings_asked = 0  # runs whose rank 0 was asked to list the pages it copies
        self.run_folders: dict[str, str] = {}  # run id -> its folder, until the run is swept
        self.learning = ""  # the run whose rank 0 lists the pages it copies (Become.list_pages), until it ends
        self.pages_listed: bytes | None = None  # what that rank listed, not yet read (see pages_to_copy)
        self.written: list[tuple[int, int]] = []  # the pages each rank pooled from now on copies as it waits
        _contain.become_subreaper()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)

    def serve(self, preload: tuple[str, ...] = ()) -> None:
        """Answer the kernel; import ``preload`` one module at a time whenever no request is waiting, no rank is
        alive (an import blocks this loop, and with it the exit reports the kernel waits for) and the kernel has
        been idle :data:`PRELOAD_AFTER_IDLE` seconds, so that a run is not kept waiting behind an import."""
        send(self.out_fd, Ready(os.getpid()))
        pending = list(preload)
        kernel = _Activity(os.getppid(), give_up_after=KERNEL_WAIT_MAX)
        while True:
            timeout = None
            may_preload = bool(pending) and not self.children
            # a pool forked before every module was imported would import them again in each rank
            may_refill = not pending and not self.children and len(self.pool) < self.pool_size
            if may_preload:
                timeout = 0.0 if self.eager else min(max(PRELOAD_AFTER_IDLE - kernel.idle_for(), 0.0), KERNEL_LOOK)
            elif may_refill:
                timeout = max(0.0, self.swept_at + REFILL_AFTER - time.monotonic())
            readable = _protocol.readable([self.in_fd, self.wake_r], timeout)
            if not readable and may_preload:
                if self.eager or kernel.idle_for() >= PRELOAD_AFTER_IDLE:
                    _preload(pending.pop(0))
                    if not pending:
                        if os.environ.get(HUGE_PAGES_VARIABLE) != "0":  # before the pool is forked
                            share_in_huge_pages()
                        send(self.out_fd, Preloaded())
                continue
            if not readable and may_refill and time.monotonic() >= self.swept_at + REFILL_AFTER:
                try:
                    self.fork_pooled()
                except OSError:  # a limit a rank lowered (prlimit): no pool, ranks are forked when asked
                    self.pool_size = 0
                continue
            if self.wake_r in readable:
                os.read(self.wake_r, 4096)
            self.reap()
            if self.in_fd in readable:
                message = receive(self.in_fd)
                if message is None or isinstance(message, Quit):
                    self.kill_all()
                    if message is None:
                        self.remove_dead_kernels_folders()
                    return
                self.handle(message)

    def handle(self, message) -> None:
        if isinstance(message, PreloadNow):
            self.eager = True
        elif isinstance(message, Launch):
            spec = message.spec
            self.run_dirs.add(spec.run_dir)
            self.run_folders[spec.run_id] = spec.run_dir
            self.launches += 1
            self.pool_size = min(spec.options.world_size, POOL_MAX)
            if spec.cgroup:
                self.cgroups[spec.run_id] = spec.cgroup
            self.next_cgroup = spec.next_cgroup
            self.next_store_port = spec.next_store_port
            try:
                pids = tuple(
                    self.hand_over(spec, rank, list_pages=rank == 0 and self.learns(spec.run_id))
                    or self.fork_rank(spec, rank)
                    for rank in range(spec.options.world_size)
                )
            except OSError as error:  # EMFILE, EAGAIN: a rank may have lowered this process's limits (prlimit)
                self.abandon(spec.run_id)
                send(self.out_fd, LaunchFailed(spec.run_id, f"{type(error).__name__}: {error}"))
                return
            keys = self.take_keys()  # only now, all forked: no rank was forked with another's key in memory
            send(self.out_fd, Started(spec.run_id, pids, tuple(_contain.start_time(p) or 0 for p in pids), keys))
            for pid in pids if spec.cgroup else ():  # once every rank is forked: a move waits for a fork under way
                if self.pooled_in.pop(pid, "") != spec.cgroup:  # (each rank checks before any learner code runs)
                    _contain.move_into_cgroup(spec.cgroup, pid)
        elif isinstance(message, SignalRanks):
            for pid, (owner, _rank) in list(self.children.items()):
                if owner == message.run_id:
                    self.signal_rank(pid, message.signum)

    def abandon(self, run_id: str) -> None:
        """Kill and reap the ranks of ``run_id`` forked so far, and what they started; close their key pipes."""
        for fd in self.key_fds:
            os.close(fd)
        self.key_fds = []
        for pid, (owner, _rank) in list(self.children.items()):
            if owner == run_id:
                del self.children[pid]
                self.kill_and_reap(pid)
        self.sweep(run_id)

    def kill_and_reap(self, pid: int) -> None:
        """SIGKILL an unreaped child (a rank, or a pooled one), wait for it and close its pidfd."""
        self.signal_rank(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        fd = self.pidfds.pop(pid, None)
        if fd is not None:
            os.close(fd)

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
        key_r, key_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(key_r)
            os.close(key_w)
            raise
        if pid == 0:
            os.close(key_r)
            self.become_rank(RankSpec(spec, rank), parent, key_w)
        os.close(key_w)
        self.key_fds.append(key_r)
        self.children[pid] = (spec.run_id, rank)
        self.open_pidfd(pid)
        return pid

    def open_pidfd(self, pid: int) -> None:
        try:
            self.pidfds[pid] = os.pidfd_open(pid)
        except (OSError, AttributeError):
            pass

    def fork_pooled(self) -> int:
        """Fork a rank that waits for its run (:class:`Become`) on a pipe of its own."""
        parent = os.getpid()
        if self.pages_listed is not None:  # read here, between runs: the launch that listed them is over
            self.written = pages_to_copy(self.pages_listed)
            self.pages_listed = None
        opened: list[int] = []
        try:
            key_r, key_w = os.pipe()
            opened += (key_r, key_w)
            spec_r, spec_w = os.pipe()
            opened += (spec_r, spec_w)
            # the child is born with this name (a rank of no run: tests and benchmarks tell them apart by it)
            _contain.name_process(_contain.POOLED_NAME)
            try:
                pid = os.fork()
            finally:
                if os.getpid() == parent:
                    _contain.name_process(self.name)
        except OSError:
            for fd in opened:
                os.close(fd)
            raise
        if pid == 0:
            os.close(key_r)
            os.close(spec_w)
            self.become_rank(None, parent, key_w, spec_r)
        os.close(key_w)
        os.close(spec_r)
        os.set_blocking(spec_w, False)
        try:
            fcntl.fcntl(spec_w, fcntl.F_SETPIPE_SZ, SPEC_PIPE_SIZE)
        except OSError:  # above /proc/sys/fs/pipe-max-size: the write below waits for the rank to read
            pass
        self.pool[pid] = (spec_w, key_r)
        self.open_pidfd(pid)
        if self.next_cgroup and _contain.move_into_cgroup(self.next_cgroup, pid):  # between runs: no launch waits
            self.pooled_in[pid] = self.next_cgroup
        return pid

    def learns(self, run_id: str) -> bool:
        """Whether rank 0 of this run (if pooled) lists the pages it copies: until one listing has been read (the
        first runs of a notebook often come before the pool, which waits for the preloading), then every
        :data:`LEARN_EVERY` runs."""
        if not self.written and self.pages_listed is None and self.listings_asked < LEARN_FIRST:
            return True
        return self.launches % LEARN_EVERY == 0

    def hand_over(self, spec: RunSpec, rank: int, list_pages: bool = False) -> int | None:
        """Make a pooled rank ``rank`` of ``spec``; its pid, or None (no pooled rank could take it)."""
        while self.pool:
            pid, (spec_w, key_r) = self.pool.popitem()
            message = frame(Become(spec, rank, list_pages))
            taken = not _contain.is_stopped(pid) and _write_within(spec_w, message, HAND_OVER_TIMEOUT)
            os.close(spec_w)
            if taken:
                self.key_fds.append(key_r)
                self.children[pid] = (spec.run_id, rank)
                if list_pages:
                    self.learning = spec.run_id
                    self.listings_asked += 1
                return pid
            os.close(key_r)
            self.end_pooled(pid)
        return None

    def end_pooled(self, pid: int) -> None:
        """Kill and reap a rank that was pooled (never handed a run, or one that did not take it)."""
        self.pooled_in.pop(pid, None)
        self.kill_and_reap(pid)

    def empty_pool(self) -> None:
        for pid, fds in list(self.pool.items()):
            for fd in fds:
                os.close(fd)
            del self.pool[pid]
            self.end_pooled(pid)

    def take_keys(self) -> tuple[bytes, ...]:
        """The key each rank just forked made for itself (b"" for one that died first), from the pipe only it
        held; the pipes are closed."""
        keys, give_up = [], time.monotonic() + KEY_TIMEOUT
        for fd in self.key_fds:
            ready = _protocol.readable([fd], give_up - time.monotonic())
            key = os.read(fd, SEAL_KEY_SIZE) if ready else b""
            keys.append(key if len(key) == SEAL_KEY_SIZE else b"")
            os.close(fd)
        self.key_fds = []
        return tuple(keys)

    def become_rank(self, spec: RankSpec | None, parent: int, key_w: int, spec_r: int = -1) -> None:
        """In a child just forked: become a rank of ``spec``, or, pooled (``spec`` None), wait on ``spec_r`` for
        the run to become a rank of."""
        code = 70
        try:
            # first of all, the rank's own key, made here, after the fork: it never exists in the warm
            # process while another rank is forked, so no other rank can seal an outcome as this one
            key = os.urandom(SEAL_KEY_SIZE)
            os.write(key_w, key)
            os.close(key_w)
            # Everything inherited (torch and the preloaded modules: ~280,000 objects) into the collector's
            # permanent generation, which no collection walks: a collection in the rank, automatic or the
            # script runner's at the end (``_rank.finish_like_exit``, 0.17 s each, 4 ranks on 2 cores: 0.5 s of
            # every script run), then walks only what the rank made, and writes into none of the pages it
            # shares with the warm process. O(1): the generations' lists are joined. No object of the
            # learner's exists yet.
            gc.freeze()
            _contain.die_with_parent(parent)
            try:
                os.setsid()  # its own session and process group: what it starts can be found and killed
            except OSError:
                pass
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            pooled = [fd for fds in self.pool.values() for fd in fds]
            for fd in (
                self.in_fd,
                self.out_fd,
                self.wake_r,
                self.wake_w,
                *self.pidfds.values(),
                *self.key_fds,
                *pooled,
            ):
                os.close(fd)  # the earlier ranks' key and spec pipes too: before any of the learner's code runs
            from barrierlab import _rank

            if spec is None:  # pooled: its run comes later; what needs no run is done while it waits
                _rank.prepare(self.kernel[0])
                _rank.connect_ahead(self.next_store_port)
                _rank.copy_ahead(self.written)
                message = receive(spec_r)
                os.close(spec_r)
                if not isinstance(message, Become):  # the warm process closed the pipe: not needed
                    code = 0
                    return
                spec = RankSpec(message.spec, message.rank)
                if message.list_pages:
                    _rank.list_pages_to = os.path.join(spec.run.run_dir, WRITTEN_PAGES_FILE)
            _contain.hold_run_folder(spec.run.run_dir)  # all it forks holds the run's folder open
            code = _rank.main(spec, key)
        finally:
            os._exit(code)

    def reap(self) -> None:
        """Reap every ended child (ranks, and orphans adopted as subreaper); report ranks' exits; when a
        run's last rank has ended, kill what its ranks left running and report the run swept."""
        ended_runs = set()
        while True:
            try:
                ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                break
            if ended is None:
                break
            pid = ended.si_pid
            if pid in self.children:  # a rank: end its process group while its unreaped PID still names it
                try:  # (one signal, no race with a chain of processes forking and exiting in the group)
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:
                continue
            run_id, rank = self.children.pop(pid, (None, None))
            if run_id is not None and run_id == self.learning and rank == 0:  # before the kernel removes the folder
                self.learning = ""
                self.pages_listed = _read_listing(os.path.join(self.run_folders.get(run_id, ""), WRITTEN_PAGES_FILE))
            fd = self.pidfds.pop(pid, None)
            if fd is not None:
                os.close(fd)
            self.pooled_in.pop(pid, None)
            for fd in self.pool.pop(pid, ()):  # a pooled rank killed while it waited
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
            self.run_folders.pop(run_id, None)
            send(self.out_fd, Swept(run_id, self.sweep(run_id)))
            self.swept_at = time.monotonic()

    def sweep(self, run_id: str) -> int:
        """Kill what the run's ranks started: its cgroup in one write (where the kernel made one), then every
        descendant but the ranks of runs still going and the pooled ranks (and what they started); the adopted
        orphans are reaped by the next :meth:`reap` (their SIGCHLD wakes the loop)."""
        killed = _contain.kill_cgroup(self.cgroups.pop(run_id, ""))
        return killed + _contain.kill_descendants(os.getpid(), keep=set(self.children) | set(self.pool))

    def remove_dead_kernels_folders(self) -> list[str]:
        """Once the kernel is dead (this process has been re-parented), remove its run folders: a SIGKILLed
        kernel cannot, and the next kernel would only at its first run. Only folders named for this kernel's
        PID and start time, in the folders its runs used and the temp folder; never a symlink, never another
        user's. Nothing while the kernel lives (it closes the pipe to replace this process, mid-run)."""
        pid, start = self.kernel
        # A dying kernel's pipe closes (its files go first) a moment before this process is re-parented: give
        # that moment, bounded (CI at load once saw the pipe closed and the parent unchanged, and left the folder).
        give_up = time.monotonic() + REPARENT_WAIT
        while start is not None and os.getppid() == pid and time.monotonic() < give_up:
            time.sleep(0.01)
        if start is None or os.getppid() == pid:
            return []
        for cgroup in (*self.cgroups.values(), self.next_cgroup):  # killed by kill_all; a dead kernel cannot
            _contain.remove_cgroup(cgroup)  # remove them
        import stat
        import tempfile

        prefix = (run_dir_prefix(pid, start), gone_dir_prefix(pid, start))  # gone: it was removing them
        removed = []
        for folder in {os.path.dirname(path) for path in self.run_dirs} | {tempfile.gettempdir()}:
            try:
                names = [name for name in os.listdir(folder) if name.startswith(prefix)]
            except OSError:
                continue
            for name in names:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
                    _segments.unlink_left(path)  # the run's ranks are dead: what they left in /dev/shm
                    _files.remove_tree(path)
                    removed.append(path)
        return removed

    def kill_all(self) -> None:
        self.empty_pool()
        for pid in list(self.children):
            self.signal_rank(pid, signal.SIGKILL)
        for pid in list(self.children):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.children.clear()
        for cgroup in self.cgroups.values():
            _contain.kill_cgroup(cgroup)
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
    from barrierlab import record

    record.prepare()
    barrierlab._rank.loopback_interface()  # looked up once, for every rank
    _segments.install()  # once, inherited by every rank: a rank notes the shared memory it makes

    warm = WarmProcess(in_fd, out_fd)
    try:
        warm.serve(modules_to_preload())
    except BrokenPipeError:  # the kernel is gone (e.g. shut down while this process was still importing)
        warm.kill_all()
        warm.remove_dead_kernels_folders()
    except ProtocolError as error:  # another process wrote into the kernel's pipe: believe nothing more of it
        print(f"barrierlab: the warm process stops: {error}", file=sys.stderr)
        warm.kill_all()
    # Every rank is killed and reaped; tearing down an interpreter holding torch, dynamo and DCP took 1.2 s,
    # which bl.shutdown() and the end of `barrierlab run` waited for. Nothing here needs its atexit handlers.
    sys.stderr.flush()
    os._exit(0)


class _Activity:
    """How long a process (the kernel) has been idle, from a look at its state and CPU time each time it is asked:
    busy when it is running or runnable (``R``) or waiting on a disk (``D``), or used at least
    :data:`KERNEL_BUSY_SHARE` of a CPU since the last look. After ``give_up_after`` seconds of being asked, and
    when the process is gone, it answers "idle for ever"."""

    def __init__(self, pid: int, give_up_after: float) -> None:
        self.pid = pid
        self.give_up_after = give_up_after
        self.asked_since: float | None = None
        self.at = time.monotonic()
        self.seen = _contain.state_and_ticks(pid)
        self.idle_since: float | None = None  # busy until a look says otherwise

    def idle_for(self) -> float:
        now = time.monotonic()
        self.asked_since = self.asked_since or now
        look = _contain.state_and_ticks(self.pid)
        if look is None or self.seen is None or now - self.asked_since >= self.give_up_after:
            return math.inf
        (state, ticks), (_, before) = look, self.seen
        used = (ticks - before) / os.sysconf("SC_CLK_TCK")
        busy = state in ("R", "D") or used >= KERNEL_BUSY_SHARE * max(now - self.at, KERNEL_LOOK)
        self.seen, self.at = look, now
        if busy:
            self.idle_since = None
        elif self.idle_since is None:
            self.idle_since = now
        return 0.0 if self.idle_since is None else now - self.idle_since


def _write_within(fd: int, data: bytes, seconds: float) -> bool:
    """Write all of ``data`` to the non-blocking pipe ``fd`` within ``seconds``; False if the reader has gone
    or does not read."""
    view, give_up = memoryview(data), time.monotonic() + seconds
    while view:
        try:
            view = view[os.write(fd, view) :]
            continue
        except BlockingIOError:
            pass
        except OSError:  # BrokenPipeError: the pooled rank has died
            return False
        remaining = give_up - time.monotonic()
        if remaining <= 0 or not _protocol.writable(fd, remaining):
            return False
    return True


#: 2 MiB: the size of a huge page on x86-64 and arm64 with 4 KiB pages.
HUGE_PAGE = 2 << 20
MADV_HUGEPAGE, MADV_COLLAPSE = 14, 25
#: Set to "0" to keep the warm process's memory in ordinary pages (see :func:`share_in_huge_pages`).
HUGE_PAGES_VARIABLE = "BARRIERLAB_HUGE_PAGES"


def share_in_huge_pages(maps: str = "/proc/self/maps") -> int:
    """Put this process's private anonymous memory (the heap of torch and the preloaded modules: about 220 MB)
    into huge pages, where Linux can (``MADV_COLLAPSE``, Linux 6.1+; elsewhere nothing happens). A fork copies,
    and a child's exit tears down, one page-table entry per 2 MiB instead of 512: measured on the 2-core machine,
    a forked child of this process exits in 1.8 ms instead of 7.7 ms, and a 4-rank run costs about 20 % less
    CPU (kernel, warm process and ranks together). A rank that writes to such a page still copies only 4 KiB of
    it (the kernel splits the mapping first). Returns how many bytes were collapsed."""
    try:
        madvise = libc().madvise
        import ctypes

        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open(maps) as f:
            lines = f.read().splitlines()
    except (OSError, AttributeError):
        return 0
    collapsed = 0
    for line in lines:
        fields = line.split()
        name = " ".join(fields[5:])
        if len(fields) < 5 or fields[1][:2] != "rw" or fields[1][3:4] != "p":
            continue  # not private and writable
        if name and name != "[heap]" and not name.startswith("[anon:"):
            continue  # a file's pages, the stack, the vdso
        low, high = (int(x, 16) for x in fields[0].split("-"))
        start, end = -(-low // HUGE_PAGE) * HUGE_PAGE, high // HUGE_PAGE * HUGE_PAGE
        if end > start and madvise(start, end - start, MADV_HUGEPAGE) == 0:
            collapsed += (end - start) if madvise(start, end - start, MADV_COLLAPSE) == 0 else 0
    return collapsed


def _preload(name: str) -> None:
    import importlib

    try:
        importlib.import_module(name)
    except Exception as error:  # a missing optional module must not stop the lab
        print(f"barrierlab: could not preload {name}: {error}", file=sys.stderr)


if __name__ == "__main__":
    main()


def _read_listing(path: str) -> bytes | None:
    """The pages a rank listed (:data:`LISTING_MAX` bytes at most; never through a symlink), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(fd, LISTING_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)


def pages_to_copy(listing: bytes, maps: str = "/proc/self/maps") -> list[tuple[int, int]]:
    """The ranges of a rank's listing (``start length`` in hex, a line each) that lie in this process's private
    writable memory, whole pages, in order, :data:`COPY_AHEAD_MAX` bytes at most. A rank's code could have written
    the file: anything else in it is left out, and copying a page ahead never changes what it holds."""
    page = os.sysconf("SC_PAGE_SIZE")
    try:
        with open(maps) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    own = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 5 or fields[1][:2] != "rw" or fields[1][3:4] != "p":
            continue
        name = fields[5].strip() if len(fields) > 5 else ""
        if name.startswith("[") and name != "[heap]" and not name.startswith("[anon:"):
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        own.append((low, high))
    own.sort()
    asked = []
    for line in listing.decode("ascii", "replace").splitlines():
        parts = line.split()
        try:
            start, length = int(parts[0], 16), int(parts[1], 16)
        except (IndexError, ValueError):
            continue
        if start % page or length <= 0 or length % page:
            continue
        asked.append((start, start + length))
    asked.sort()
    ranges, total, i = [], 0, 0
    for start, end in asked:
        while i < len(own) and own[i][1] <= start:
            i += 1
        j = i
        while j < len(own) and own[j][0] < end and total < COPY_AHEAD_MAX:
            low, high = max(start, own[j][0]), min(end, own[j][1])
            high = min(high, low + COPY_AHEAD_MAX - total)
            if high > low:
                if ranges and ranges[-1][0] + ranges[-1][1] == low:
                    ranges[-1] = (ranges[-1][0], ranges[-1][1] + high - low)
                else:
                    ranges.append((low, high - low))
                total += high - low
            j += 1
    return ranges
