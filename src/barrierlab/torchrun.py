"""barrierlab under torchrun: the worker entry that records a rank, and the reader that rebuilds a Run.

Every scenario module ends with ``torchrun_main(scenario)`` (this module's :func:`main`), so the function a
notebook runs with ``barrierlab.run`` also runs as one torchrun worker::

    torchrun --nproc-per-node 4 -m barrierlab.scenarios.<name> [key=value ...]

Each worker records to a *record folder* (``$BARRIERLAB_RECORD_DIR``, else a fresh private folder per
machine) the same :class:`~barrierlab._protocol.RankFiles` a ``barrierlab.run`` rank writes, ending with its
:class:`~barrierlab._protocol.Outcome`; :func:`barrierlab.collect.from_records` reads such folders (from one machine or
merged from several) into the same :class:`~barrierlab.result.Run` a notebook gets.

Record folders are private: created exclusively with mode 0700 when barrierlab makes them; a folder
named by ``BARRIERLAB_RECORD_DIR`` that already exists must be a real directory (not a symlink) owned by
the user and not writable by group or others, which every rank checks before writing; files in it are
opened with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import ast
import contextlib
import os
import signal
import stat
import sys
import tempfile
import time
from datetime import timedelta

from barrierlab._files import UnsafeEntry, rank_files
from barrierlab._protocol import (
    DIAGNOSIS_CLAIM,
    RECORD_DIR_VARIABLE,
    Outcome,
    RankFiles,
    Status,
    claim_diagnosis,
    clock_anchor,
    error_message,
    exit_status,
    exit_text,
    format_error,
    terminal_text,
)

#: Process-group timeout under torchrun, unless BARRIERLAB_TIMEOUT (seconds) says otherwise: a deadlock
#: scenario then fails within seconds and exits non-zero instead of waiting torch's 30 minutes.
TORCHRUN_TIMEOUT = 10.0
#: The environment variable that names the record folder.
#: A rank record with no outcome, changed this recently (seconds), may be another job's at work: a new job
#: leaves a named folder holding one as it is.
LIVE_RECORD = 60.0
#: How long a failing rank waits for the other ranks' outcomes before it prints the diagnosis.
EXPLAIN_WAIT = 2.0


class UnsafeRecordFolder(PermissionError):
    """The record folder could be read or written by someone else; barrierlab will not write into it."""


# --- key=value arguments ---------------------------------------------------------------------------------
def parse_kwargs(argv: list[str]) -> dict:
    """``["steps=3", "slow_rank=1"]`` -> ``{"steps": 3, "slow_rank": 1}`` (values as Python literals)."""
    kwargs = {}
    for item in argv:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise SystemExit(f"arguments are key=value pairs, got {item!r}")
        try:
            kwargs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            kwargs[key] = value
    return kwargs


# --- record folders ----------------------------------------------------------------------------------------
def check_private_folder(path: str) -> None:
    """Raise :class:`UnsafeRecordFolder` unless ``path`` is a directory (not a symlink) owned by this user
    and writable by nobody else."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise UnsafeRecordFolder(f"the record folder {path} does not exist") from None
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeRecordFolder(
            f"the record folder {path} is a symbolic link (to {os.readlink(path)}): barrierlab writes only into a "
            f"real folder, so that nobody can redirect its files. Set {RECORD_DIR_VARIABLE} to the folder itself."
        )
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeRecordFolder(f"the record folder {path} is not a folder")
    if info.st_uid != os.geteuid():
        raise UnsafeRecordFolder(
            f"the record folder {path} belongs to user id {info.st_uid}, not to you (user id {os.geteuid()}): "
            f"someone else could read or replace the records. Set {RECORD_DIR_VARIABLE} to a folder of your own, "
            "or leave it unset for a fresh private one."
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeRecordFolder(
            f"the record folder {path} is writable by {'others' if info.st_mode & stat.S_IWOTH else 'its group'} "
            f"(mode {stat.S_IMODE(info.st_mode):04o}): they could plant files or links in it. "
            f"Run `chmod go-w {path}` (or 700), or choose another folder."
        )


def prepare_named_folder(path: str) -> str:
    """The folder named by ``BARRIERLAB_RECORD_DIR``, made private (0700) if this rank creates it, checked
    (:func:`check_private_folder`) in every case. Returns its absolute path."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, mode=0o700, exist_ok=True)
    try:
        os.mkdir(path, 0o700)  # exclusive: fails if it exists, then it is checked below
    except FileExistsError:
        pass
    check_private_folder(path)
    return path


def _node_folder(local_rank: int, node: str, timeout: float) -> str:
    """A fresh private folder for this machine's ranks: local rank 0 creates it with an unpredictable name
    (``mkdtemp``: exclusive, 0700) and tells its local peers through the group's store."""
    import torch.distributed as dist

    store = dist.PrefixStore("barrierlab/record_dir/", dist.group.WORLD.get_group_store())
    if local_rank == 0:
        folder = tempfile.mkdtemp(prefix="barrierlab-torchrun-")
        store.set(node, folder)
    else:
        store.wait([node], timedelta(seconds=timeout))
        folder = store.get(node).decode()
    check_private_folder(folder)
    return folder


def _fresh_named_folder(folder: str, rank: int, timeout: float) -> None:
    """A named folder may hold an earlier job's records (``BARRIERLAB_RECORD_DIR=records/demo`` used twice): its
    ranks beyond this job's world, and its ``diagnosis.claimed``, which would keep this job's failure from being
    explained (attack20 a12). The first rank of each machine (``LOCAL_RANK`` 0: the folder may be on each
    machine's own disk, attack24 a05) removes barrierlab's own files of an earlier job (``rankN.*`` and the claim,
    nothing else) before any rank of this job writes; every rank waits for every machine's through the group's
    store (as :func:`_node_folder` does), for at most ``timeout`` seconds. On a shared folder the machines'
    first ranks remove the same files, before anyone writes."""
    import torch.distributed as dist

    store = dist.PrefixStore("barrierlab/record_dir/", dist.group.WORLD.get_group_store())
    node, nodes, first = _machine()
    keys = [f"cleared/{n}" for n in range(nodes)]
    if not (first or rank == 0 and nodes == 1):
        store.wait(keys, timedelta(seconds=timeout))
        return
    _clear_earlier_job(folder, rank)
    store.set(f"cleared/{node}", "1")
    store.wait(keys, timedelta(seconds=timeout))


def _machine() -> tuple[int, int, bool]:
    """(this machine's number, the number of machines, whether this rank is its machine's first), from the
    variables torchrun's agent sets (``GROUP_RANK``, ``GROUP_WORLD_SIZE``, ``LOCAL_RANK``); one machine whose
    first rank is rank 0 when they are missing or not numbers."""
    try:
        node, nodes = int(os.environ["GROUP_RANK"]), int(os.environ["GROUP_WORLD_SIZE"])
        local = int(os.environ["LOCAL_RANK"])
    except (KeyError, ValueError):
        return 0, 1, False
    if not 0 <= node < nodes <= 100_000:
        return 0, 1, False
    return node, nodes, local == 0


def _clear_earlier_job(folder: str, rank: int) -> None:
    """Remove an earlier job's rank files and claim from ``folder`` (this machine's), saying so; leave them
    when a rank of them wrote in the last :data:`LIVE_RECORD` seconds with no outcome yet."""
    earlier = rank_files(folder)
    live = [r for r, kinds in earlier.items() if "outcome" not in kinds and _changed_within(folder, r, LIVE_RECORD)]
    if live:  # another job may be writing there now: its files are left alone
        print(
            f"[barrierlab] rank {rank}: {folder} holds records of rank(s) {', '.join(map(str, live))} written in the last "
            f"{LIVE_RECORD:g} s with no outcome yet (another job using the same folder?): they are left in place, "
            "and the report may mix the two jobs; give each job its own folder",
            file=sys.stderr,
            flush=True,
        )
        return
    for old_rank, kinds in earlier.items():
        for kind in kinds:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(RankFiles(folder, old_rank).of_kind(kind))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(folder, DIAGNOSIS_CLAIM))
    if earlier:
        ranks = sorted(earlier)
        named = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks[0]}-{ranks[-1]}"
        print(
            f"[barrierlab] rank {rank}: {folder} held an earlier job's records ({named}): removed them, so that the "
            "folder holds this job's only (give each job its own folder to keep them)",
            file=sys.stderr,
            flush=True,
        )


def _changed_within(folder: str, rank: int, seconds: float) -> bool:
    try:
        return time.time() - os.lstat(RankFiles(folder, rank).events).st_mtime < seconds
    except FileNotFoundError:
        return False


def _create_private_file(path: str) -> None:
    """Create (or empty) ``path`` without following a symlink planted in its place."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise UnsafeRecordFolder(f"{path} is not a regular file of yours")
    finally:
        os.close(fd)


# --- the worker entry --------------------------------------------------------------------------------------
class _Termination:
    """After the learner's function has ended, torchrun's SIGTERM (sent to every worker once one fails)
    must not cut off the outcome and the diagnosis: it is noted, and only ends a wait."""

    def __init__(self) -> None:
        self.received = False
        self.waiting = False

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum, frame) -> None:
        self.received = True
        if self.waiting:
            raise _StopWaiting


class _StopWaiting(Exception):
    pass


def main(fn, argv: list[str] | None = None) -> None:
    """Run ``fn`` as one torchrun worker: env:// rendezvous, gloo, a bounded timeout, recording, exit code.

    Writes this rank's files to the record folder. Exits 0 if ``fn`` returned; if it raised, prints the
    traceback and then the diagnosis of the ranks recorded on this machine (once per folder), then exits 1.
    The first local rank prints the record folder's path for ``python -m barrierlab report``.
    """
    import torch
    import torch.distributed as dist

    from barrierlab import record
    from barrierlab._rank import call_the_function

    kwargs = parse_kwargs(sys.argv[1:] if argv is None else argv)
    timeout = float(os.environ.get("BARRIERLAB_TIMEOUT", TORCHRUN_TIMEOUT))
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    named = os.environ.get(RECORD_DIR_VARIABLE)
    try:
        folder = prepare_named_folder(named) if named else None
    except (UnsafeRecordFolder, OSError) as error:
        print(
            f"[barrierlab] rank {os.environ.get('RANK', '?')}: refusing {RECORD_DIR_VARIABLE}: {error}",
            file=sys.stderr,
            flush=True,
        )
        os._exit(2)
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    rank, world_size = dist.get_rank(), dist.get_world_size()
    try:
        if folder:
            _fresh_named_folder(folder, rank, timeout)
        folder = folder or _node_folder(local_rank, os.environ.get("GROUP_RANK", "0"), timeout)
        files = RankFiles(folder, rank)
        _create_private_file(files.events)
    except (UnsafeRecordFolder, UnsafeEntry, OSError, dist.DistError) as error:
        print(f"[barrierlab] rank {rank}: cannot record: {error}", file=sys.stderr, flush=True)
        os._exit(2)
    record.start(files.events, rank)
    outcome = Outcome(rank=rank, world_size=world_size, status=Status.RAISED, pid=os.getpid(), t_start=time.monotonic())
    termination = _Termination()
    try:
        # called through the contract's step (as a barrierlab.run rank does), so recorded call sites and
        # stacks stop at the learner's function instead of walking on into this module and runpy
        value = call_the_function(fn, (), kwargs)
        outcome.status, outcome.value_repr = Status.FINISHED, _clip(repr(value))
    except SystemExit as exit_:  # the status Python itself would exit with; a message is printed as it does
        outcome.status, outcome.exit_code = Status.EXITED, exit_status(exit_.code)
        text = exit_text(exit_.code)
        if text is not None:
            print(text, file=sys.stderr, flush=True)
    except BaseException as error:  # report, then exit non-zero like any failed worker
        termination.install()
        tb = error.__traceback__
        for _ in range(2):  # start at the learner's function, not at this entry
            tb = tb.tb_next if tb is not None and tb.tb_next is not None else tb
        text = format_error(error, tb)  # a learner's __str__ may raise: the rank reports anyway
        print(text, end="", file=sys.stderr, flush=True)
        outcome.error_type = f"{type(error).__module__}.{type(error).__qualname__}"
        outcome.message, outcome.traceback = error_message(error), text
    termination.install()
    outcome.t_end, outcome.clock = time.monotonic(), clock_anchor()
    record.stop()
    outcome.events_lost = record.lost_record
    outcome.write(files.outcome)
    code = 0 if outcome.status == Status.FINISHED else (outcome.exit_code if outcome.status == Status.EXITED else 1)
    if code:  # a folder of this machine only holds its local ranks' records, a shared one every rank's
        expected = world_size if named else int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
        _explain(folder, rank, expected, termination)
    if local_rank == 0:
        print(
            f"[barrierlab] rank {rank}: records in {folder}\n"
            f"[barrierlab] timeline and diagnosis: python -m barrierlab report {folder}",
            file=sys.stderr,
        )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: a poisoned gloo group can hang in its destructor


def _clip(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _explain(folder: str, rank: int, expected: int, termination: _Termination) -> None:
    """Print the diagnosis once per folder: wait (at most EXPLAIN_WAIT, less if torchrun's SIGTERM comes)
    for the ``expected`` ranks' outcomes, then the first failing rank to claim the folder prints it."""
    give_up = time.monotonic() + EXPLAIN_WAIT
    termination.waiting = True
    try:
        while not termination.received and time.monotonic() < give_up:
            if len([r for r in RankFiles.ranks_in(folder) if os.path.exists(RankFiles(folder, r).outcome)]) >= expected:
                break
            time.sleep(0.05)
    except _StopWaiting:
        pass
    finally:
        termination.waiting = False
    if not claim_diagnosis(folder):
        return
    try:
        from barrierlab.collect import from_records

        run = from_records(folder)
        text = f"{run.diagnosis}\n\n{run.ledger()}"
    except Exception as error:  # the diagnosis must never hide the rank's own failure
        text = f"(no diagnosis: {type(error).__name__}: {error})"
    print(
        f"\n[barrierlab] rank {rank}: diagnosis of the ranks recorded in {folder}\n{terminal_text(text)}\n\n"
        f"Timeline: python -m barrierlab report {folder} --timeline timeline.png",
        file=sys.stderr,
        flush=True,
    )
