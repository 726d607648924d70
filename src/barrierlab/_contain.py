"""Keeping every process a run starts inside the run (Linux; elsewhere these are no-ops).

* where the system allows it (cgroup v2 with ``cgroup.kill``, as root or in a delegated cgroup) each run has a
  cgroup of its own, which every rank is in before any of the learner's code runs: whatever it starts is born
  in it, and one write to ``cgroup.kill`` ends it all, however it detached, renamed itself or hops between PIDs;
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


def libc():
    """The C library (ctypes), loaded once; OSError where it cannot be."""
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _prctl(option: int, value: int) -> bool:
    try:
        return libc().prctl(option, value, 0, 0, 0) == 0
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
    try:
        import ctypes

        return libc().prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def process_comm(pid: int) -> bytes:
    """The name of ``pid`` (``/proc/PID/comm``), b"" if unknown."""
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


def kill_descendants(root: int, keep: set[int] = frozenset(), within: float = 1.0) -> int:
    """SIGKILL every descendant of ``root`` (this process, normally) except ``keep`` and their subtrees, pass
    after pass until a pass finds none alive, for at most ``within`` seconds. A pass walks down from ``root``
    through ``/proc/PID/task/*/children`` (microseconds a process; a scan of all of ``/proc`` took
    milliseconds, which a chain of processes that forks and exits every millisecond outran) and signals each
    process as soon as it is found; a killed process's children are re-parented to the subreaper, where the
    next pass finds them. Returns how many were killed."""
    killed: set[int] = set()
    children = _children(root)
    if children is None:
        return _kill_descendants_by_scan(root, keep, within)
    if children <= set(keep):
        return 0  # nothing but the kept: every orphan of a dead rank would be the subreaper's child
    give_up = time.monotonic() + within
    me = os.getpid()
    listed_before: set[int] = set()
    while True:
        alive = new = 0
        listed: set[int] = set()
        todo = [root]
        while todo:
            parent = todo.pop()
            for pid in _children(parent) or ():
                if pid in keep:
                    continue
                listed.add(pid)
                state = _kill_child(pid, parent, own=parent == root == me)
                if state is None:
                    continue
                todo.append(pid)
                if state not in ("Z", "X"):
                    alive += 1
                    new += pid not in killed
                    killed.add(pid)
        # Done when a pass found nothing alive and nothing the pass before had not listed: a process that
        # exited (a zombie, or gone) between the listing of its parent's children and its check may have forked
        # first, and its orphan joined the root's children after they were listed; the next pass finds it
        # (a chain that forks and exits every millisecond escaped once, in a fresh-clone CI run).
        if (not alive and listed <= listed_before) or time.monotonic() >= give_up:
            return len(killed)
        listed_before = listed
        if not new:
            time.sleep(0.0005)  # only processes already killed, still on their way out


def _kill_child(pid: int, parent: int, own: bool) -> str | None:
    """SIGKILL ``pid``, found as a child of ``parent``; its state as it was (``Z`` a zombie), or None if it is
    gone or no longer ``parent``'s child. A child of this process (``own``) cannot be another process while it
    is unreaped; a deeper one is signalled through a pidfd opened before its parent is checked again."""
    fd = None
    try:
        if not own:
            fd = os.pidfd_open(pid)
        fields = _stat_fields(pid)
        if fields is None or int(fields[1]) != parent:
            return None
        state = fields[0].decode()
        if state not in ("Z", "X"):
            if fd is None:
                os.kill(pid, signal.SIGKILL)
            else:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        return state
    except (OSError, AttributeError):
        return None
    finally:
        if fd is not None:
            os.close(fd)


def _kill_descendants_by_scan(root: int, keep: set[int], within: float) -> int:
    """:func:`kill_descendants` where the kernel lists no children per task: a scan of ``/proc`` each pass."""
    killed: set[int] = set()
    give_up = time.monotonic() + within
    while True:
        table = _processes()
        spared = set(keep)
        for pid in keep:
            spared |= descendants(pid, table)
        targets = descendants(root, table) - spared
        for pid in targets:
            fd = open_pidfd(pid, table[pid][2])
            if fd is None:
                continue
            try:
                if signal_pidfd(fd, signal.SIGKILL):
                    killed.add(pid)
            finally:
                os.close(fd)
        if not targets or time.monotonic() >= give_up:
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


#: The lowest descriptor a rank holds its run's folder at (:func:`hold_run_folder`), out of the way of the
#: learner's own files (the recorder's are at 512 and above too).
MARKER_FD = 600


def hold_run_folder(run_dir: str) -> int | None:
    """In a rank: hold the run's folder open (close-on-exec, at :data:`MARKER_FD` or above). A process the rank
    forks keeps the descriptor whatever it is named, whichever session it is in: a mark
    :func:`kill_run_leftovers` finds where no cgroup holds the run. Returns the descriptor, None if it failed."""
    import fcntl

    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, MARKER_FD)
    except OSError:
        return fd
    os.close(fd)
    return high


def folder_identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of a folder, which a process holding it open shows in ``/proc/PID/fd``."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def holds_folder(pid: int, identity: tuple[int, int]) -> bool:
    """Whether ``pid`` holds the folder of ``identity`` open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            info = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (info.st_dev, info.st_ino) == identity:
            return True
    return False


def kill_run_leftovers(
    run_id: str, sessions: set[int], since: int, passes: int = 20, folder: tuple[int, int] | None = None
) -> int:
    """From outside the warm process (it is gone or stopped): SIGKILL this user's processes started since
    ``since`` (clock ticks) that carry the run's environment marker (what the ranks exec), its process name
    (:func:`mark_process`: what they fork without exec), hold the run's ``folder`` open (:func:`hold_run_folder`:
    what they fork, renamed or not) or belong to one of the ranks' sessions (each rank leads its own session).
    Returns how many were killed."""
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
            if (
                sid in sessions
                or process_comm(pid) == name
                or environ_has(pid, marker)
                or (folder is not None and holds_folder(pid, folder))
            ):
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


# --- a cgroup per run (cgroup v2, where this user may make one) -------------------------------------------
#: Environment variable that turns run cgroups off when it is ``0`` (the other mechanisms remain).
CGROUP_VARIABLE = "BARRIERLAB_CGROUP"
#: Why this process makes no run cgroups ("" while it has not tried or makes them), said once by docs and
#: tests; set by the first :func:`make_run_cgroup` that fails.
cgroup_unavailable = ""
_cgroup_parent: str | None = None


def _cgroup2_parent() -> str:
    """The folder of this process's own cgroup in the cgroup v2 hierarchy (``/sys/fs/cgroup`` on a v2 system,
    ``/sys/fs/cgroup/unified`` in the hybrid layout); raises OSError where there is none."""
    with open("/proc/self/cgroup") as f:
        own = next((line[3:].strip() for line in f if line.startswith("0::")), None)
    if own is None:
        raise OSError("no cgroup v2 hierarchy (/proc/self/cgroup has no 0:: line)")
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            if fields[dash + 1] == "cgroup2":
                root, mount = fields[3], fields[4]
                if own == root or own.startswith(root.rstrip("/") + "/"):
                    return os.path.join(mount, own[len(root.rstrip("/")) :].lstrip("/"))
    raise OSError("the cgroup v2 hierarchy is not mounted where this process can reach its own cgroup")


def make_run_cgroup(name: str) -> str:
    """Make the cgroup ``name`` beside this process's own (a child of it) and return its folder, or "" where
    cgroup v2 is missing, lacks ``cgroup.kill`` (Linux < 5.14) or this user may not make one (no delegation,
    not root); after one failure, "" at once (the reason is in :data:`cgroup_unavailable`)."""
    global _cgroup_parent, cgroup_unavailable
    if os.environ.get(CGROUP_VARIABLE) == "0":
        cgroup_unavailable = f"turned off ({CGROUP_VARIABLE}=0)"
    if cgroup_unavailable:
        return ""
    try:
        if _cgroup_parent is None:
            _cgroup_parent = _cgroup2_parent()
        path = os.path.join(_cgroup_parent, name)
        os.mkdir(path)
    except (OSError, ValueError) as error:
        cgroup_unavailable = f"{type(error).__name__}: {error}"
        return ""
    if not os.path.exists(os.path.join(path, "cgroup.kill")):
        remove_cgroup(path)
        cgroup_unavailable = "cgroup.kill is missing (Linux 5.14 or later has it)"
        return ""
    if _fresh_settings is None:
        _note_fresh_settings(path)
    return path


#: The files of a cgroup whose content says how the processes in it run, which a process outside it can write
#: where it may write to cgroups (root, or the user the cgroup is delegated to): a rank of one run can write
#: them in the next run's cgroup, made ahead (``cgroup.freeze`` 1 stopped the next run's ranks, attack8 a5).
#: Those of the controllers enabled in the cgroup are checked too where they exist.
GUARDED_FILES = (
    "cgroup.freeze",
    "cgroup.type",
    "cgroup.subtree_control",
    "cgroup.max.depth",
    "cgroup.max.descendants",
)
GUARDED_LIMITS = {
    "cpu": ("cpu.max", "cpu.max.burst", "cpu.weight", "cpu.idle", "cpu.uclamp.min", "cpu.uclamp.max"),
    "cpuset": ("cpuset.cpus", "cpuset.mems", "cpuset.cpus.partition", "cpuset.cpus.exclusive"),
    "io": ("io.max", "io.weight", "io.latency", "io.bfq.weight"),
    "memory": (
        "memory.max",
        "memory.high",
        "memory.low",
        "memory.min",
        "memory.swap.max",
        "memory.swap.high",
        "memory.zswap.max",
        "memory.oom.group",
    ),
    "pids": ("pids.max",),
    "rdma": ("rdma.max",),
    "misc": ("misc.max",),
}
#: file name -> its content in a cgroup just made (read once, from the first this process makes: every cgroup
#: it makes beside its own starts alike). None until then.
_fresh_settings: dict[str, bytes] | None = None


def _read_setting(path: str, name: str) -> bytes | None:
    try:
        with open(os.path.join(path, name), "rb") as f:
            return f.read()
    except OSError:
        return None


def _note_fresh_settings(path: str) -> None:
    global _fresh_settings
    names = list(GUARDED_FILES)
    controllers = (_read_setting(path, "cgroup.controllers") or b"").decode(errors="replace").split()
    for controller in controllers:
        names += GUARDED_LIMITS.get(controller, ())
    if controllers and "hugetlb" in controllers:
        try:
            names += [n for n in os.listdir(path) if n.startswith("hugetlb.") and n.endswith((".max", ".rsvd.max"))]
        except OSError:
            pass
    settings = {name: _read_setting(path, name) for name in names}
    _fresh_settings = {name: value for name, value in settings.items() if value is not None}


def cgroup_untouched(path: str) -> bool:
    """Whether the cgroup at ``path`` (made ahead by this process) is as it was made: its settings
    (:data:`GUARDED_FILES`, and the limits of its controllers) as in a fresh cgroup, and no cgroup below it.
    Where it is not, a rank of an earlier run changed it (frozen it, limited it): the kernel uses a fresh one
    instead. A read per setting (5 here: about 0.1 ms)."""
    if not path or _fresh_settings is None:
        return True
    for name, value in _fresh_settings.items():
        if _read_setting(path, name) != value:
            return False
    return not _subfolders_of(path)


def thaw_cgroup(path: str) -> None:
    """Write 0 to ``cgroup.freeze`` of the cgroup at ``path``: what a rank froze in it (the pooled ranks of the
    next run, which may be frozen before they have handed the warm process their key) runs again at once."""
    try:
        with open(os.path.join(path, "cgroup.freeze"), "w") as f:
            f.write("0")
    except OSError:
        pass


def _subfolders_of(path: str) -> bool:
    try:
        with os.scandir(path) as entries:
            return any(e.is_dir(follow_symlinks=False) for e in entries)
    except OSError:
        return True


def run_cgroups_available() -> bool:
    """Whether this process can make run cgroups (it makes one and removes it to find out)."""
    path = make_run_cgroup(f"barrierlab-probe-{os.getpid()}")
    remove_cgroup(path)
    return bool(path)


def join_cgroup(path: str) -> bool:
    """Move the calling process into the cgroup at ``path`` (in a rank, before any of the learner's code runs):
    every process it starts from then on is born in it, however it detaches or renames itself."""
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write("0")
        return True
    except OSError:
        return False


def move_into_cgroup(path: str, pid: int) -> bool:
    """Move process ``pid`` into the cgroup at ``path``. False if it could not."""
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(pid))
        return True
    except OSError:
        return False


def enter_cgroup(path: str) -> bool:
    """Be in the cgroup at ``path`` (where the warm process has normally moved this rank already; else move
    now). False if this process is not in it."""
    try:
        with open("/proc/self/cgroup") as f:
            own = next((line[3:].strip() for line in f if line.startswith("0::")), "")
    except OSError:
        own = ""
    if own and os.path.basename(own) == os.path.basename(path):
        return True
    return join_cgroup(path)


def cgroup_processes(path: str, within: float = 10.0) -> list[int]:
    """The processes in the cgroup at ``path`` and the cgroups below it (a nested run's), as far as
    :func:`walk_folders` gets within its bounds (``within`` seconds)."""
    found: list[int] = []

    def read_procs(fd: int, _parent: int | None, _name: str | None) -> bool:
        try:
            with open(os.open("cgroup.procs", os.O_RDONLY, dir_fd=fd)) as f:
                found.extend(int(pid) for pid in f.read().split())
        except (OSError, ValueError):
            pass
        return True

    walk_folders(path, read_procs, within=within)
    return found


#: Most folders :func:`walk_folders` visits in one walk, and for how long (seconds): a rank can make a cgroup
#: tree below its run's (root may), 1,200 deep in 6 s here; removing that chain took 0.1 s. The kernel walks
#: such a tree only in the background (``launch._end_cgroup``), and to count what it kills for 50 ms at most.
WALK_FOLDERS_MOST = 200_000
WALK_SECONDS = 10.0


def walk_folders(path: str, leave, most: int = WALK_FOLDERS_MOST, within: float = WALK_SECONDS) -> bool | None:
    """Visit the folder ``path`` and every folder below it (symlinks not followed), each after the folders
    below it: ``leave(fd, parent_fd, name)`` is called with the folder open at ``fd``, its parent open at
    ``parent_fd`` and its ``name`` there (None, None for ``path`` itself), and stops the walk if it returns
    False. Iterative, through descriptors (at most two open at a time, whatever the depth, and paths never longer
    than a name): ``os.walk`` recursed once per level, so a rank's chain of 1,200 cgroups raised RecursionError out
    of ``bl.run`` (attack8 a4). Returns True when every folder was visited, False if the walk stopped (``leave``,
    or more than ``most`` folders, or ``within`` seconds), None if ``path`` could not be opened."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    give_up = time.monotonic() + within
    names: list[str | None] = [None]  # the name of each folder on the way down, the top's None
    pending = [_subfolders(fd)]  # each folder's subfolders not yet visited
    visited = 0
    try:
        while True:
            if pending[-1]:
                name = pending[-1].pop()
                try:
                    child = os.open(name, flags, dir_fd=fd)
                except OSError:
                    continue
                visited += 1
                os.close(fd)
                fd = child
                names.append(name)
                pending.append(_subfolders(fd))
                if visited > most or time.monotonic() > give_up:
                    return False
                continue
            name = names.pop()
            pending.pop()
            if name is None:
                return leave(fd, None, None) is not False
            try:
                parent = os.open("..", flags, dir_fd=fd)
            except OSError:
                return False
            try:
                stop = leave(fd, parent, name) is False
            finally:
                os.close(fd)
                fd = parent
            if stop:
                return False
    finally:
        os.close(fd)


def _subfolders(fd: int) -> list[str]:
    try:
        with os.scandir(fd) as entries:
            return [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _populated(path: str) -> bool:
    try:
        with open(os.path.join(path, "cgroup.events")) as f:
            return "populated 1" in f.read()
    except OSError:
        return False


def kill_cgroup(path: str, within: float = 1.0) -> int:
    """SIGKILL every process in the cgroup at ``path`` and below it with one write to ``cgroup.kill`` (the kernel
    kills a process forked meanwhile too: no race with a fork chain), then wait up to ``within`` seconds until
    it is empty. Returns how many processes it held."""
    if not path or not _populated(path):
        return 0
    count = len(cgroup_processes(path, within=0.05))  # a count, for the record: never long before the kill
    try:
        with open(os.path.join(path, "cgroup.kill"), "w") as f:
            f.write("1")
    except OSError:
        return 0
    give_up = time.monotonic() + within
    while _populated(path) and time.monotonic() < give_up:
        time.sleep(0.001)
    return count


def remove_cgroup(path: str) -> bool:
    """Remove the (empty) cgroup at ``path`` and the cgroups below it; False if one still holds a process or
    the tree is beyond :func:`walk_folders`'s bounds (what is left stays for a later removal)."""
    if not path:
        return True

    def remove(_fd: int, parent: int | None, name: str | None) -> bool:
        try:
            if parent is None:
                os.rmdir(path)
            else:
                os.rmdir(name, dir_fd=parent)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        return True

    done = walk_folders(path, remove)
    return done is not False and (done or not os.path.lexists(path))


def end_cgroup_here_or(path: str, later) -> None:
    """Kill what the cgroup at ``path`` holds (waiting up to 1 s for it to empty), then remove it here if it is a
    single cgroup (one rmdir), else hand it to ``later(path)``: a tree of cgroups below it (root may make them)
    takes a while to walk."""
    if not path:
        return
    kill_cgroup(path)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:
        later(path)


def end_cgroup(path: str, within: float = 1.0) -> int:
    """:func:`kill_cgroup`, then :func:`remove_cgroup`. Returns how many processes it killed."""
    killed = kill_cgroup(path, within)
    remove_cgroup(path)
    return killed


def stale_cgroups(is_stale) -> list[str]:
    """The folders of run cgroups beside this process's own whose name ``is_stale(name)`` says belong to a
    dead kernel ([] where this process makes none)."""
    global _cgroup_parent
    if cgroup_unavailable:
        return []
    try:
        if _cgroup_parent is None:
            _cgroup_parent = _cgroup2_parent()
        return [os.path.join(_cgroup_parent, n) for n in os.listdir(_cgroup_parent) if is_stale(n)]
    except (OSError, ValueError):
        return []
