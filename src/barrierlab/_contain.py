"""Keeping every process a run starts inside the run (Linux; elsewhere these are no-ops).

* the warm process is a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): a process a rank starts that
  detaches (double fork, ``setsid``, ``start_new_session=True``) is re-parented to it, not to init, so it stays
  a descendant the warm process can find;
* each rank dies with the warm process even while it holds the GIL: ``PR_SET_PDEATHSIG`` = SIGKILL, set right
  after fork, then a ``getppid()`` check against the parent's PID taken before fork (the parent may have
  died in between);
* a process is signalled only through a pidfd opened while it is known to be ours (a descendant seen in
  ``/proc`` again after the pidfd is open, or a start time that matches), never by a PID alone, so a PID
  reused by an unrelated process is never hit; never by name.
"""

from __future__ import annotations

import os
import signal
import time

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36
#: Environment variable every rank carries (and every program it execs inherits): the run's id.
RUN_MARKER = "BARRIERLAB_RUN_ID"

_libc = None


def _prctl(option: int, value: int) -> bool:
    global _libc
    try:
        if _libc is None:
            import ctypes

            _libc = ctypes.CDLL(None, use_errno=True)
        return _libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants. False where unsupported."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def process_name(run_id: str) -> bytes:
    """The name (``/proc/PID/comm``, 15 bytes at most) every rank of run ``run_id`` takes, and every process it
    forks keeps until it execs: ``blrun`` and the first 10 hex digits of the run's id."""
    return f"blrun{run_id[:10]}".encode()


#: The name (``/proc/PID/comm``) of a rank the warm process forked ahead of time, while it waits for a run.
POOLED_NAME = b"blpooled"


def mark_process(run_id: str) -> bool:
    """Name the calling thread (the rank's main thread) after the run. The environment marker reaches only
    programs the rank execs (``/proc/PID/environ`` shows the environment a process was exec'ed with, not
    ``os.environ``); the name reaches what it forks without exec, such as a Python daemon in its own session."""
    return name_process(process_name(run_id))


def name_process(name: bytes) -> bool:
    """Set the calling thread's name (``/proc/PID/comm``, 15 bytes at most)."""
    global _libc
    try:
        if _libc is None:
            import ctypes

            _libc = ctypes.CDLL(None, use_errno=True)
        import ctypes

        return _libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def process_comm(pid: int) -> bytes:
    """The name of ``pid`` (``/proc/PID/comm``), b"" if unknown."""
    return _comm(pid)


def _comm(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/comm", "rb") as f:
            return f.read().rstrip(b"\n")
    except OSError:
        return b""


def die_with_parent(parent_pid: int) -> None:
    """In a freshly forked child: be SIGKILLed when the parent dies; exit now if it is already gone."""
    _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() != parent_pid:
        os._exit(75)


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/pid/stat`` from field 3 (state) on, or None; fields[k] is field k + 3 of proc(5)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data[data.rindex(b")") + 2 :].split()


def _stat(pid: int) -> tuple[int, int, int, str] | None:
    """(parent pid, session id, start time in clock ticks since boot, state) of ``pid``, or None."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    # state is field 3, ppid 4, session 6, starttime 22
    return int(fields[1]), int(fields[3]), int(fields[19]), fields[0].decode()


def state_and_ticks(pid: int) -> tuple[str, int] | None:
    """``pid``'s state (``R`` running or runnable, ``S`` sleeping, ``D`` waiting on a disk, ...) and the CPU time
    it has used in clock ticks, from one read of ``/proc/pid/stat``; None if it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else (fields[0].decode(), int(fields[11]) + int(fields[12]))


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), the second half of a process's identity."""
    stat = _stat(pid)
    return None if stat is None else stat[2]


def is_stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped (SIGSTOP, or traced), a zombie, or gone: a process that will not answer."""
    stat = _stat(pid)
    return stat is None or stat[3] in ("T", "t", "Z", "X")


def ticks_now() -> int:
    """Now, in the unit of :func:`start_time`."""
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK"))


def _processes() -> dict[int, tuple[int, int, int, str]]:
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                table[int(name)] = stat
    return table


def descendants(root: int, table: dict | None = None) -> set[int]:
    """Every live (not zombie) descendant of ``root``."""
    table = _processes() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _sid, _start, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return {pid for pid in found if table[pid][3] not in ("Z", "X")}


def open_pidfd(pid: int, expected_start: int | None = None) -> int | None:
    """A pidfd for ``pid`` if it is alive (and started at ``expected_start`` when given), else None."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None
    if expected_start is not None and start_time(pid) != expected_start:
        os.close(fd)
        return None
    return fd


def signal_pidfd(fd: int, signum: int) -> bool:
    try:
        signal.pidfd_send_signal(fd, signum)
        return True
    except (OSError, AttributeError):
        return False


def kill_descendants(root: int, keep: set[int] = frozenset(), passes: int = 50) -> int:
    """SIGKILL every descendant of ``root`` (this process, normally) except ``keep`` and their subtrees,
    pass after pass until none is left (a process forked between two passes is found by the next; a killed
    process's children are re-parented to the subreaper). Returns how many were killed."""
    killed: set[int] = set()
    children = _children(root)
    if children is not None and children <= set(keep):
        return 0  # nothing but the kept: every orphan of a dead rank would be the subreaper's child
    for _ in range(passes):
        table = _processes()
        spared = set(keep)
        for pid in keep:
            spared |= descendants(pid, table)
        targets = descendants(root, table) - spared
        if not targets:
            break
        for pid in targets:
            fd = open_pidfd(pid, table[pid][2])
            if fd is None:
                continue
            try:
                if signal_pidfd(fd, signal.SIGKILL):
                    killed.add(pid)
            finally:
                os.close(fd)
        time.sleep(0.002)
    return len(killed)


def _children(pid: int) -> set[int] | None:
    """The direct children of ``pid`` (zombies included) from ``/proc/PID/task/*/children``, None if the kernel
    does not provide that file."""
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        for task in tasks:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found.update(int(p) for p in f.read().split())
    except (OSError, ValueError):
        return None
    return found


def environ_has(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:
        return False


def kill_run_leftovers(run_id: str, sessions: set[int], since: int, passes: int = 20) -> int:
    """From outside the warm process (it is gone or stopped): SIGKILL this user's processes started since
    ``since`` (clock ticks) that carry the run's environment marker (what the ranks exec), its process name
    (:func:`mark_process`: what they fork without exec) or belong to one of the ranks' sessions (each rank
    leads its own session). Returns how many were killed."""
    marker = f"{RUN_MARKER}={run_id}".encode()
    name = process_name(run_id)
    uid = os.getuid()
    me = os.getpid()
    killed: set[int] = set()
    for _ in range(passes):
        hit = 0
        for pid, (_ppid, sid, start, state) in _processes().items():
            if pid == me or state in ("Z", "X") or start < since:
                continue
            try:
                if os.stat(f"/proc/{pid}").st_uid != uid:
                    continue
            except OSError:
                continue
            if sid in sessions or _comm(pid) == name or environ_has(pid, marker):
                fd = open_pidfd(pid, start)
                if fd is None:
                    continue
                try:
                    if signal_pidfd(fd, signal.SIGKILL):
                        killed.add(pid)
                        hit += 1
                finally:
                    os.close(fd)
        if not hit:
            break
        time.sleep(0.005)
    return len(killed)
