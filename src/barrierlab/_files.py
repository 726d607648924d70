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
  :data:`MAX_RANKS` by name, so the world size is bounded by what is there.
"""

from __future__ import annotations

import os
import re
import stat
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
