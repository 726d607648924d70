"""Shared memory that a run's ranks made and left: noted by each rank, unlinked once the ranks are gone.

multiprocessing's resource tracker (a process a rank starts with its first ``SharedMemory(create=True)`` or named
semaphore) unlinks what is still registered when the processes that use it have ended. A rank that ends lets it
finish (``_rank._let_the_resource_tracker_finish``); a rank stopped at the deadline is killed with its process
group, the tracker with it, and its segments stayed in /dev/shm (RAM) for good (attack9 a4). So each rank notes,
in its run's folder (:data:`NOTES_FILE`), every segment it *creates* (name, device and inode: ``SharedMemory``
made with ``create=True``, and tracked; a named semaphore) and every name it unregisters (``shm.unlink()``, or
``resource_tracker.unregister`` to keep a segment, the tracker's own bookkeeping); a process the rank forks
inherits the hooks and notes in the same file. When the run's folder is removed, every rank having ended,
:func:`unlink_left` unlinks the names still registered there that still name the same file, a regular file of
this user's: never a segment the run did not create (another notebook's, one a rank only attached to, one made
under a name freed since). Linux (/dev/shm) only. Not noted: segments registered by a process a rank started
with another interpreter (``spawn``/``forkserver`` children register with the rank's tracker, not through
these hooks); a rank that ends normally still has its tracker unlink those.

The hooks are installed once in the warm process (inherited by every rank it forks: nothing on a launch's
path) and write nothing until a rank names its file (:func:`note_to`)."""

from __future__ import annotations

import json
import os
import stat

#: The notes' file in a run's folder (one for the run: each rank and what it forks appends lines to it).
NOTES_FILE = "segments"
#: Where Linux keeps POSIX shared memory and named semaphores (``sem.NAME``).
SHM_DIR = "/dev/shm"
#: Most bytes of notes read (about 10,000 segments).
NOTES_MAX = 1 << 20

_notes_path = ""
_installed = False


def note_to(path: str) -> None:
    """In a rank, before any of the learner's code runs: note segments in ``path`` from now on."""
    global _notes_path
    _notes_path = path


def _note(*fields) -> None:
    """Append one line to the notes; never raises (the learner's call it hooks must go on as it would)."""
    if not _notes_path:
        return
    try:
        fd = os.open(_notes_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        os.write(fd, (json.dumps(fields) + "\n").encode())
    except (OSError, ValueError, TypeError):
        pass
    finally:
        os.close(fd)


def _file_of(rtype: object, name: object) -> str | None:
    """The file in /dev/shm of a POSIX name (``/psm_1a2b``) the resource tracker knows, or None."""
    if not isinstance(name, str) or not name.startswith("/") or rtype not in ("shared_memory", "semaphore", "torch"):
        return None
    if rtype == "torch" and not name.startswith("/torch_"):
        return None
    rest = name[1:]
    if not rest or "/" in rest or "\0" in rest or rest in (".", "..") or len(rest) > 250:
        return None
    return os.path.join(SHM_DIR, "sem." + rest if rtype == "semaphore" else rest)


def _note_created(rtype: str, name: str, fd: int | None = None) -> None:
    if not _notes_path:
        return
    try:
        info = os.fstat(fd) if fd is not None and fd >= 0 else os.lstat(_file_of(rtype, name) or "")
    except (OSError, TypeError, ValueError):
        return
    _note("+", rtype, name, info.st_dev, info.st_ino)


def install() -> None:
    """Hook ``SharedMemory.__init__`` (a segment created and tracked is noted) and the resource tracker's
    messages (a named semaphore registered, any name unregistered). Once per process; in the warm process."""
    global _installed
    if _installed or not os.path.isdir(SHM_DIR):
        return
    _installed = True
    from multiprocessing import resource_tracker, shared_memory

    made = shared_memory.SharedMemory.__init__

    def __init__(self, *args, **kwargs):
        made(self, *args, **kwargs)
        if _notes_path and getattr(self, "_flags", 0) & os.O_EXCL and getattr(self, "_track", True):
            _note_created("shared_memory", getattr(self, "_name", None), getattr(self, "_fd", None))

    __init__.__wrapped__ = made
    __init__.__doc__ = made.__doc__
    shared_memory.SharedMemory.__init__ = __init__

    send = resource_tracker.ResourceTracker._send  # what register() and unregister() call, however imported

    def _send(self, cmd, name, rtype):
        send(self, cmd, name, rtype)
        if not _notes_path:
            return
        if cmd == "UNREGISTER":
            _note("-", rtype, name)
        elif cmd == "REGISTER" and rtype == "semaphore":  # SemLock registers only the semaphores it creates
            _note_created(rtype, name)

    _send.__wrapped__ = send
    resource_tracker.ResourceTracker._send = _send


#: Most /dev/shm entries :func:`note_own_torch_files` reads.
_SHM_ENTRIES_READ = 100_000


def note_own_torch_files() -> None:
    """As a rank ends (with ``os._exit``: no storage destructor runs): note its files of torch's "file_system"
    sharing strategy still in /dev/shm, ``torch_<this pid>_...`` (torch names them after the process that made
    them), so that the run's clean-up unlinks them as a torchrun worker's exit would (attack14 a09: a
    ``model.share_memory()`` left one file per parameter). Never raises."""
    if not _notes_path:
        return
    prefix = f"torch_{os.getpid()}_"
    try:
        with os.scandir(SHM_DIR) as entries:
            for count, entry in enumerate(entries):
                if count >= _SHM_ENTRIES_READ:
                    break
                if entry.name.startswith(prefix):
                    _note_created("torch", "/" + entry.name)
    except OSError:
        pass


def unlink_left(folder: str) -> list[str]:
    """Unlink the segments the notes in ``folder`` (a run's folder, every rank of it ended) leave registered, each
    only if its name still names the file the rank created (same device and inode), a regular file of this user's.
    Returns the files unlinked. Never raises; reads at most :data:`NOTES_MAX` bytes, never follows a symlink and
    never blocks on a FIFO (a rank writes the notes)."""
    try:
        fd = os.open(os.path.join(folder, NOTES_FILE), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    chunks, size = [], 0
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        while size < NOTES_MAX:
            chunk = os.read(fd, NOTES_MAX - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return []
    finally:
        os.close(fd)
    registered: dict[tuple[str, str], tuple[int, int]] = {}
    for line in b"".join(chunks).splitlines():
        try:
            fields = json.loads(line)
        except ValueError:
            continue
        if not isinstance(fields, list) or len(fields) < 3 or not all(isinstance(f, str) for f in fields[:3]):
            continue
        if fields[0] == "+" and len(fields) == 5 and all(type(f) is int for f in fields[3:]):
            registered[(fields[1], fields[2])] = (fields[3], fields[4])
        elif fields[0] == "-":
            registered.pop((fields[1], fields[2]), None)
    unlinked = []
    uid = os.geteuid()
    for (rtype, name), identity in registered.items():
        path = _file_of(rtype, name)
        if path is None:
            continue
        try:
            info = os.lstat(path)
            if (
                stat.S_ISREG(info.st_mode)
                and info.st_uid == uid
                and (info.st_dev, info.st_ino) == identity
                and not _in_use(path, identity)
            ):
                os.unlink(path)
                unlinked.append(path)
        except OSError:
            pass
    return unlinked


def _in_use(path: str, identity: tuple[int, int]) -> bool:
    """Whether a live process maps the file at ``path`` (device and inode ``identity``) or holds it open. The
    run's ranks have all ended when their notes are read, so such a process is not the run's: the caller's
    kernel, another notebook (attack28 a13: a rank noted the caller's own segment, from ``os.stat``, and the
    clean-up unlinked it). Looked up only for segments the notes leave registered (a rank stopped at the
    deadline), in /proc; a process whose maps or descriptors cannot be read counts as not using it."""
    device, inode = identity
    own_inode = str(inode).encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/maps", "rb") as maps:
                for line in maps:
                    fields = line.split(None, 5)
                    if len(fields) >= 5 and fields[4] == own_inode and b":" in fields[3]:
                        major, minor = fields[3].split(b":", 1)
                        if os.makedev(int(major, 16), int(minor, 16)) == device:
                            return True
        except (OSError, ValueError):
            pass
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in descriptors:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                    return True
            except OSError:
                continue
    return False
