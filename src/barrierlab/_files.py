"""Opening the files a rank left (or anyone put) in a run's or a record folder, without trusting them.

A rank runs the learner's code, and ``barrierlab report`` reads folders it did not write: a rank file may be a
symlink (to ``/dev/zero``, to another user's file), a FIFO (which blocks a reader forever), a device, a file of
hundreds of megabytes on one line, or a name claiming rank fifty million. Every place that reads a rank file
opens it here:

* :func:`open_regular` opens a regular file only (``O_NOFOLLOW | O_NONBLOCK``, then ``fstat``), else raises
  :class:`UnsafeEntry` naming the entry;
* :func:`read_bytes` reads a whole file of at most ``limit`` bytes; :func:`head_and_tail` its ends;
* :func:`bounded_line` reads one line of at most ``limit`` bytes (a longer one is skipped, not kept);
* :func:`rank_files` lists the rank files of a folder, refusing odd entries and rank numbers beyond
  :data:`MAX_RANKS` by name, so the world size is bounded by what is there;
* :func:`source_text` and :func:`source_line` read the source of a file *named inside* a rank file (a frame's
  file in an events line, a stack, a traceback): such a name is anything a rank wrote, so only a regular file
  whose name ends in ``.py`` (or a notebook cell's source already in this process's memory) is read, at most
  :data:`SOURCE_LIMIT` bytes, never more than :data:`SOURCE_BUDGET` seconds in any :data:`SOURCE_WINDOW`, and
  kept in a cache of its own bounded in files and bytes (never in ``linecache``).
"""

from __future__ import annotations

import linecache
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from typing import BinaryIO

#: Longest line of a rank file kept, in bytes; a longer line is skipped.
MAX_LINE = 1 << 20
#: Most ranks a folder may hold (rank numbers 0 .. MAX_RANKS - 1).
MAX_RANKS = 4096
#: The rank files: ``rank<N>.<kind>`` with ``N`` written without leading zeros.
KINDS = ("stdout", "stderr", "events", "stack", "flight", "outcome")
_RANK_FILE = re.compile(r"^rank(0|[1-9][0-9]*)\.(" + "|".join(KINDS) + r")$")


class UnsafeEntry(ValueError):
    """A folder entry that is not a regular file of bounded size, or a rank name out of bounds; the message
    names the entry."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _refuse(path: str, what: str) -> UnsafeEntry:
    return UnsafeEntry(f"{os.path.basename(path)} ({path}) is {what}: barrierlab reads only regular rank files")


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading in binary, if it is a regular file (never through a symlink, never blocking
    on a FIFO). FileNotFoundError if it does not exist; :class:`UnsafeEntry` if it is anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == 40:  # ELOOP: the last component is a symlink
            raise _refuse(path, "a symbolic link") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, _kind(mode))
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_bytes(path: str, limit: int) -> bytes:
    """The whole of a regular file of at most ``limit`` bytes; :class:`UnsafeEntry` if it is larger."""
    with open_regular(path) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UnsafeEntry(f"{os.path.basename(path)} ({path}) is larger than {limit:,} bytes: not read")
    return data


def head_and_tail(path: str, keep: int) -> bytes:
    """A regular file's first and last ``keep`` bytes (all of it if it is at most ``2 * keep``), with a line
    saying how much was left out between them."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size <= 2 * keep:
            return f.read(2 * keep)
        head = f.read(keep)
        f.seek(size - keep)
        omitted = size - 2 * keep
        return head + f"\n[… {omitted:,} bytes of output omitted …]\n".encode() + f.read(keep)


def bounded_line(f: BinaryIO, limit: int = MAX_LINE) -> bytes | None:
    """The next line of ``f`` (with its newline), ``b""`` at the end of the file, or None for a line longer
    than ``limit`` bytes, which is read past (in pieces of ``limit``) and not kept."""
    line = f.readline(limit + 1)
    if len(line) <= limit:
        return line
    while line and not line.endswith(b"\n"):
        line = f.readline(limit)
    return None


def rank_files(folder: str, max_ranks: int = MAX_RANKS) -> dict[int, set[str]]:
    """The rank files in ``folder``: rank -> the kinds present (``{"events", "outcome"}``...). Other names are
    ignored; a rank file that is not a regular file, or whose rank is ``max_ranks`` or more, makes it raise
    :class:`UnsafeEntry` naming every such entry."""
    found: dict[int, set[str]] = {}
    refused = []
    with os.scandir(folder) as entries:
        for entry in entries:
            match = _RANK_FILE.match(entry.name)
            if match is None:
                continue
            rank = int(match.group(1)) if len(match.group(1)) < 12 else max_ranks
            mode = entry.stat(follow_symlinks=False).st_mode
            if not stat.S_ISREG(mode):
                refused.append(f"{entry.name} is {_kind(mode)}")
            elif rank >= max_ranks:
                refused.append(f"{entry.name} names a rank beyond the largest accepted ({max_ranks - 1})")
            else:
                found.setdefault(rank, set()).add(match.group(2))
    if refused:
        raise UnsafeEntry(
            f"{folder} holds entries barrierlab will not read (only regular rank files are): "
            + "; ".join(sorted(refused))
        )
    return dict(sorted(found.items()))


# --- source files named by a rank's record ---------------------------------------------------------------
#: Largest source file read to show a line of code or find a function, in bytes (larger: no line shown).
SOURCE_LIMIT = 2 << 20
#: Seconds of reading (and parsing, :func:`charge`) source files allowed per :data:`SOURCE_WINDOW` seconds:
#: past it no further file is read until time has passed, whatever a record names.
SOURCE_BUDGET = 1.0
SOURCE_WINDOW = 10.0
#: Source files kept in memory, and their bytes in total, at most.
SOURCE_FILES_KEPT = 64
SOURCE_BYTES_KEPT = 16 << 20
#: Seconds for which what ``lstat`` said of a named path is trusted before it is asked again (a diagnosis asks
#: for the same few files many times; ``lstat`` costs 2-12 µs).
SOURCE_RECHECK = 1.0
_STAT_KEPT = 4096
_checked: dict[str, tuple[float, tuple[str, tuple] | None]] = {}  # path -> (when, what _regular_source said)

_sources: OrderedDict[str, tuple[tuple, tuple[str, ...]]] = OrderedDict()  # path -> (stat stamp, lines)
_source_bytes = 0
_spent: list[tuple[float, float]] = []  # (when, seconds) of each read in the last window
_source_lock = threading.RLock()


def _in_memory(path: str) -> tuple[str, ...] | None:
    """The lines of a source this process holds in memory and no file backs: a notebook cell, which IPython
    keeps in ``linecache`` with no modification time. Looked up only: never loaded from a file."""
    entry = linecache.cache.get(path)
    if entry is not None and len(entry) == 4 and entry[1] is None and isinstance(entry[2], list):
        return tuple(entry[2])
    return None


def within_budget() -> bool:
    """Whether source files may still be read now (see :data:`SOURCE_BUDGET`)."""
    with _source_lock:
        now = time.monotonic()
        _spent[:] = [(when, seconds) for when, seconds in _spent if now - when < SOURCE_WINDOW]
        return sum(seconds for _, seconds in _spent) < SOURCE_BUDGET


def charge(seconds: float) -> None:
    """Count ``seconds`` spent on a source file (reading it, or parsing it) against :data:`SOURCE_BUDGET`."""
    with _source_lock:
        _spent.append((time.monotonic(), seconds))


def _regular_source(path: str) -> tuple[str, tuple] | None:
    """(the path to open, a stamp of its content: device, inode, size, mtime) for a regular file named
    ``*.py`` of at most :data:`SOURCE_LIMIT` bytes, found without opening anything; a symlink is followed
    only to such a file (then opened by its real name, never through a link). None for anything else: a FIFO,
    a device, a folder, a missing file, another suffix."""
    if not path.endswith(".py"):
        return None
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            path = os.path.realpath(path)
            if not path.endswith(".py"):
                return None
            info = os.lstat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > SOURCE_LIMIT:
        return None
    return path, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def source_lines(path: str) -> tuple[str, ...] | None:
    """The lines of :func:`source`, or None."""
    found = source(path)
    return None if found is None else found[1]


def source(path: str) -> tuple[tuple, tuple[str, ...]] | None:
    """(a stamp that changes with the content, its lines with their newlines) of the source at ``path``, a
    name a rank's record gave: a notebook cell's source held in memory, or a regular file named ``*.py`` of at
    most :data:`SOURCE_LIMIT` bytes (a symlink only to such a file, opened by its real name), opened
    ``O_NOFOLLOW | O_NONBLOCK``, read within the time budget. None otherwise: no FIFO, device or other file is
    ever opened, and nothing goes into ``linecache``."""
    if not isinstance(path, str) or not path:
        return None
    cell = _in_memory(path)
    if cell is not None:
        return ("in memory", len(cell)), cell
    now = time.monotonic()
    checked = _checked.get(path)
    if checked is not None and now - checked[0] < SOURCE_RECHECK:
        found = checked[1]
    else:
        found = _regular_source(path)
        if len(_checked) >= _STAT_KEPT:
            _checked.clear()
        _checked[path] = (now, found)
    if found is None:
        return None
    real, stamp = found
    global _source_bytes
    with _source_lock:
        kept = _sources.get(path)
        if kept is not None and kept[0] == stamp:
            _sources.move_to_end(path)
            return kept
        if not within_budget():
            return None
        started = time.perf_counter()
        try:
            with open_regular(real) as f:
                info = os.fstat(f.fileno())
                stamp = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
                data = f.read(SOURCE_LIMIT + 1)
        except (OSError, ValueError):
            return None
        finally:
            charge(time.perf_counter() - started)
        if len(data) > SOURCE_LIMIT or len(data) != stamp[2]:  # larger, or changing as it was read
            return None
        lines = tuple(data.decode("utf-8", errors="replace").splitlines(keepends=True))
        if kept is not None:
            _source_bytes -= kept[0][2]
        _sources[path] = (stamp, lines)
        _source_bytes += stamp[2]
        while _sources and (len(_sources) > SOURCE_FILES_KEPT or _source_bytes > SOURCE_BYTES_KEPT):
            _, (old, _) = _sources.popitem(last=False)
            _source_bytes -= old[2]
        return stamp, lines


def source_text(path: str) -> str | None:
    """The whole source at ``path`` as :func:`source_lines` reads it, or None."""
    lines = source_lines(path)
    return None if lines is None else "".join(lines)


def source_line(path: str, number: int) -> str:
    """Line ``number`` (from 1) of the source at ``path``, stripped, as :func:`source_lines` allows; "" if it
    cannot be read or has no such line."""
    lines = source_lines(path)
    if lines is None or not isinstance(number, int) or not 1 <= number <= len(lines):
        return ""
    return lines[number - 1].strip()


def remove_tree(path: str) -> None:
    """``shutil.rmtree(path, ignore_errors=True)``, also for a tree too deep for it: Python 3.11's ``rmtree``
    recurses once per level, so a chain of a few thousand folders (a rank can make one in its run folder) raised
    ``RecursionError``, which ``ignore_errors`` does not catch, out of ``bl.run``, and the folder stayed for every
    later kernel's first run to fail on (attack8). Then ``rm -rf``, which has no depth limit, removes it."""
    import shutil
    import subprocess

    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        try:
            subprocess.run(
                ["rm", "-rf", "--", path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            pass
