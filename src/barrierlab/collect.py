"""One collector: a folder of rank files -> :class:`~barrierlab.result.Run`, for ``barrierlab.run`` (the
launcher's run folder, with exit statuses) and for torchrun (a record folder, from one or several machines).

Every file here was written by a process that ran the learner's code: each is read by the one reader of its
format (:mod:`barrierlab.events`, :class:`~barrierlab._protocol.Outcome`), and a rank whose files cannot be
read becomes a rank whose record is unreadable — the other ranks' results stand."""

from __future__ import annotations

import os
from typing import BinaryIO

from barrierlab import _files
from barrierlab import events as event_files
from barrierlab._protocol import (
    PEER_GONE,
    RECORD_DIR_VARIABLE,
    ForgedOutcome,
    Outcome,
    RankFiles,
    Status,
    finite_json,
    tidy,
)
from barrierlab.result import RankResult, Run, rebuild_exception
from barrierlab.sites import CodeIndex, Site
from barrierlab.stacks import relabel_traceback, stuck_at

#: How much of each rank's stdout/stderr is kept: the head and the tail, this many bytes each.
OUTPUT_KEEP = 32 * 1024
#: Lines of the ranks' events files read per run at most, shared among the ranks, half from the start of
#: each file and half from its end (at least 500 of each per rank): what keeps collecting a flood of
#: events within a second and the kernel's memory bounded. The events in between are counted
#: (``RankResult.events_dropped``), not kept.
EVENT_LINES_PER_RUN = 10_000
#: Bytes of the ranks' events files read per run at most, shared the same way (at most
#: ``events.BYTES_KEPT`` from each end of a file, at least one line's worth): lines are bounded in length, not in number
#: of bytes per file, and 1,200 lines of 250 kB each once cost the kernel 1.7 GB.
EVENT_BYTES_PER_RUN = 64 << 20
#: Bytes of the ranks' events files, between what is kept, in which the events are counted exactly, per run
#: (shared among the ranks); the events of a larger middle are estimated from the lines kept ("about N").
#: Counting reads every byte: 6 ranks' 27 MB after a 1.5 s flood cost the kernel 0.1 s of CPU after the
#: deadline (several times that in wall time on a loaded machine), and 16 ranks could make it 16 x 64 MB.
EVENT_BYTES_COUNTED_PER_RUN = 8 << 20
#: Largest pickled return value read back from a rank, in bytes: a larger one makes its rank fail with a
#: message that says so (reading and checking it could not be bounded by the run's deadline). A value is also
#: left unread, the same way, once the run's deadline has passed while the kernel reads the ranks' values.
VALUE_LIMIT = 64 << 20


def _read_output(path: str) -> str:
    try:
        data = _files.head_and_tail(path, OUTPUT_KEEP)
    except FileNotFoundError:
        return ""
    except (OSError, ValueError) as error:
        return f"[barrierlab: not read: {error}]"
    return data.decode("utf-8", errors="replace")


#: Largest flight-recorder file read, in bytes (torch keeps 2000 entries by default: well under a MiB), and the
#: most entries kept of one (the last): a rank's own 30 MiB file cost the kernel 770 MB and the deadline (attack8).
FLIGHT_LIMIT, FLIGHT_ENTRIES = 8 << 20, 20_000


def _load_flight(path: str) -> list[tuple[str, int, str]] | None:
    try:
        entries = finite_json(_files.read_bytes(path, FLIGHT_LIMIT)).get("entries", [])[-FLIGHT_ENTRIES:]
        return [
            (
                str(e.get("profiling_name", "?")).split(":")[-1][:200],
                int(e.get("collective_seq_id") or 0),
                str(e.get("state", "?"))[:200],
            )
            for e in entries
        ]
    except (OSError, ValueError, AttributeError, TypeError, RecursionError, OverflowError):
        return None


def collect(
    run_dir: str,
    world_size: int,
    t0: float,
    elapsed: float,
    exits: dict,
    stopped: set,
    pids: list[int],
    timeout: float,
    deadline: float,
    index: CodeIndex | None = None,
    linger: bool = False,
    keys: list[bytes] | None = None,
    held: dict[int, BinaryIO] | None = None,
    heads: dict[int, event_files.Head] | None = None,
    read_until: float | None = None,
) -> Run:
    """Build the Run from the files the ranks left in ``run_dir`` and the exit statuses.

    Returned values and exceptions stay pickled (``RankResult._pickled``) until :meth:`Run.unpickle`,
    which the launcher calls once the run's bookkeeping is done and its folder is removed. ``keys[r]``: the
    key rank r sealed its outcome with; an outcome whose seal does not match was written by another process
    and is not read (the rank is reported as such). ``held[r]``: rank r's outcome file as the kernel opened it
    when it saw the rank end; read if the file was removed from the folder since (and the removal said).
    ``heads[r]``: the start of rank r's events file as read while the ranks ran (:func:`event_heads`).
    ``read_until``: the monotonic time after which no returned value larger than
    ``_protocol.PICKLE_ALWAYS_READ`` is read any more; and no value larger than :data:`VALUE_LIMIT` is read at
    all: such a rank fails with a message saying so."""
    ranks = []
    keep, keep_bytes = _kept(world_size)
    count_bytes = EVENT_BYTES_COUNTED_PER_RUN // world_size
    sites: dict[tuple, tuple[str, str]] = {}
    for rank in range(world_size):
        files = RankFiles(run_dir, rank)
        code, sig = exits.get(rank, (None, None))
        recorded = event_files.read_record(
            files.events,
            rank=rank,
            t0=t0,
            index=index,
            keep=keep,
            keep_bytes=keep_bytes,
            count_bytes=count_bytes,
            head=heads.get(rank) if heads else None,
        )
        events, dropped, flight = recorded.events, recorded.dropped, recorded.flight
        result = RankResult(
            rank=rank,
            status=Status.STOPPED,
            pid=pids[rank] if rank < len(pids) else None,
            stdout=_read_output(files.stdout),
            stderr=_read_output(files.stderr),
            exit_code=code,
            signal=sig,
            events=events,
            events_dropped=dropped,
            flight=_load_flight(files.flight) if flight is None else flight,
            outside=recorded.outside,
        )
        result.record_notes += _notes(recorded)
        key = keys[rank] if keys and rank < len(keys) else b""
        recovered = _read_held(held[rank], files, rank, key, read_until) if held and rank in held else None
        outcome = None if recovered else _read_outcome(files.outcome, rank, world_size, key, until=read_until)
        if recovered is not None:  # the folder's outcome was removed or replaced: the rank's own, held open
            outcome = recovered[0]
            result.record_notes.append(recovered[1])
        elif outcome is None and code is not None and sig is None and rank not in stopped and _removed(files):
            outcome = _removed_outcome(files, rank, world_size, code)
        if outcome is None and (code is not None or sig is not None or rank in stopped):
            replaced = _read_outcome(files.replaced, rank, world_size, key, pickles=False)
            if replaced is not None and replaced.replaced_by:  # the rank became another program (os.execv)
                outcome = _replaced_outcome(replaced, code, sig, rank in stopped)
                result.record_notes.append(_replaced_note(outcome, code, sig))
        if outcome is not None:
            apply_outcome(result, outcome, t0, index)
            if outcome.exit_code is None:
                result.exit_code = code
            if rank in stopped and result.status == Status.RAISED and PEER_GONE.search(outcome.message or ""):
                # still waiting at the deadline, it saw a peer's connection close as the launcher stopped that
                # peer first (attacks23 a08 on a loaded machine: rank 13 of 16 "raised"): stopped, not failed
                result.status = Status.STOPPED
                result.record_notes.append(
                    f"it raised {outcome.message.splitlines()[0][:120]!r} as the launcher stopped the other ranks "
                    "at the deadline: its wait was cut by the stopping, not by a failure of its own"
                )
        elif rank in stopped:
            result.status = Status.STOPPED
        elif sig is not None:
            result.status = Status.KILLED
        else:
            result.status = Status.EXITED
        if result.status == Status.STOPPED or (rank in stopped and outcome is None):
            result.stuck = stuck_at(_read_output(files.stack), index)
        for event in (*result.events, *result.outside):
            if event.file:
                key = (event.file, event.line, event.func)
                placed = sites.get(key)
                if placed is None:  # a flood of events comes from a few lines: place each line once
                    file = index.resolve(event.file, event.line, event.func) if index else event.file
                    placed = sites[key] = (file, str(Site(file, event.line, event.func)))
                event.file, event.where = placed
        ranks.append(result)
    return Run(
        world_size=world_size,
        ranks=ranks,
        elapsed=elapsed,
        timeout=timeout,
        deadline=deadline,
        hit_deadline=bool(stopped),
        linger=linger,
    )


def _replaced_outcome(outcome: Outcome, code: int | None, sig: int | None, stopped: bool) -> Outcome:
    """The outcome of a rank that replaced itself with another program (``os.execv``: a script that re-executes
    itself to set its environment before torch loads, as some launch wrappers do): it wrote the outcome just
    before the exec, and the program (the same process, still the rank) ends as the rank ends. Its exit status
    is the rank's outcome, as under torchrun: code 0 finished (the run said it "did not finish … after 0
    collective calls", attack8 a9), another code exited, a signal killed it, the deadline stopped it."""
    replaced = Outcome(
        outcome.rank, outcome.world_size, Status.EXITED, pid=outcome.pid, t_start=outcome.t_start, clock=outcome.clock
    )
    replaced.replaced_by = outcome.replaced_by
    if stopped:
        replaced.status = Status.STOPPED
    elif sig is not None:
        replaced.status = Status.KILLED
    elif code == 0:
        replaced.status = Status.FINISHED
    else:
        replaced.exit_code = code
    return replaced


def _replaced_note(outcome: Outcome, code: int | None, sig: int | None) -> str:
    how = (
        "was stopped at the deadline"
        if outcome.status == Status.STOPPED
        else (f"was killed by signal {sig}" if sig is not None else f"exited with code {code}")
    )
    return (
        f"the rank replaced itself with another program ({outcome.replaced_by}; os.exec*), which {how}: that is "
        "the rank's outcome; barrierlab recorded nothing of what the program did (its collective calls, spans, "
        "stack), only what it printed"
    )


def _kept(world_size: int) -> tuple[int, int]:
    """Lines, and bytes, read from each end of one rank's events file (its share of the run's)."""
    return max(500, EVENT_LINES_PER_RUN // (2 * world_size)), _bytes_kept(world_size)


def event_heads(run_dir: str, world_size: int) -> dict[int, event_files.Head]:
    """Each rank's events file's head as :func:`collect` keeps it, to be read while the ranks run
    (:meth:`~barrierlab.events.Head.read_more`) and handed to :func:`collect`."""
    keep, keep_bytes = _kept(world_size)
    return {rank: event_files.Head(RankFiles(run_dir, rank).events, keep, keep_bytes) for rank in range(world_size)}


def _bytes_kept(world_size: int) -> int:
    """Bytes read from each end of one rank's events file: a share of :data:`EVENT_BYTES_PER_RUN`."""
    return max(event_files.MAX_LINE_BYTES, min(event_files.BYTES_KEPT, EVENT_BYTES_PER_RUN // (2 * world_size)))


def _notes(recorded: event_files.Record) -> list[str]:
    """What of a rank's events file was left out as it was read, in words (for the run's output)."""
    if not recorded.malformed:
        return []
    return [
        f"{recorded.malformed:,} line{'s' if recorded.malformed > 1 else ''} of its events file "
        "left out (not barrierlab's: malformed, too long, or with a time that is not a finite number)"
    ]


def _removed(files: RankFiles) -> list[str]:
    """The files every rank leaves (its outcome, its stdout and stderr, which it opens before the learner's
    code runs) that are no longer in the folder, by name; [] if any of stdout and stderr is there (a rank that
    exited early, without an outcome, still has them)."""
    names = [files.outcome, files.stdout, files.stderr]
    gone = [os.path.basename(path) for path in names if not os.path.lexists(path)]
    return gone if len(gone) == len(names) else []


def _removal_note(files: RankFiles) -> str:
    """'removed before the run ended (rank1.outcome, … deleted …)': which of the rank's files are gone."""
    names = [os.path.basename(path) for path in (files.outcome, files.stdout, files.stderr, files.events)]
    gone = [name for name in names if not os.path.lexists(os.path.join(files.folder, name))]
    return (
        f"removed before the run ended ({', '.join(gone)} deleted from the run's folder by another process: "
        "another rank, or a program one started, can write there)"
    )


def _read_held(
    f: BinaryIO, files: RankFiles, rank: int, key: bytes, until: float | None = None
) -> tuple[Outcome, str] | None:
    """Rank's outcome from the file the kernel held open since it saw the rank end, with a note saying so,
    if that file is no longer the folder's (removed, or replaced) and is the rank's own (its seal matches);
    else None: the folder's outcome is read as usual (and only once: a large value costs its reading)."""
    try:
        same = os.path.samestat(os.fstat(f.fileno()), os.lstat(files.outcome))
    except OSError:
        same = False
    if same:
        return None
    try:
        outcome = Outcome.read_from(f, files.outcome, key, until=until, value_limit=VALUE_LIMIT)
        _check_types(outcome)
        if outcome.rank != rank:
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):
        return None
    if os.path.lexists(files.outcome):
        note = (
            "outcome file replaced before the run ended (by another process: another rank, or a program one "
            "started, can write there)"
        )
    else:
        note = _removal_note(files)
    return outcome, note + "; its outcome was read from the file barrierlab held open since the rank ended"


def _removed_outcome(files: RankFiles, rank: int, world_size: int, code: int | None) -> Outcome:
    """What is said of a rank whose files were all removed from the run's folder before the kernel read them:
    it ended (with ``code``), but how is unknown."""
    return Outcome(
        rank,
        world_size,
        Status.RAISED,
        error_type="builtins.RuntimeError",
        message=f"rank {rank}'s record was {_removal_note(files)}, so how it ended is unknown (its process "
        f"exited with code {code}). The other ranks' results stand. Look for code that deletes files in the "
        "folder of its stdout (rank*.* files).",
    )


def _read_outcome(
    path: str, rank: int, world_size: int, key: bytes = b"", until: float | None = None, pickles: bool = True
) -> Outcome | None:
    """The rank's outcome, checked field by field (and, with the rank's ``key``, proven to be the rank's own);
    one that cannot be read becomes an outcome that says so (the rank's own result is lost, the other ranks'
    stand). Its value is read only if at most :data:`VALUE_LIMIT` bytes, and before ``until``; its pickles
    not at all without ``pickles``."""
    try:
        outcome = Outcome.read(path, key, pickles=pickles, until=until, value_limit=VALUE_LIMIT)
        if outcome is not None:
            _check_types(outcome)
            if outcome.rank != rank:
                raise ValueError(f"it says it is rank {outcome.rank}'s")
        return outcome
    except ForgedOutcome:
        return Outcome(
            rank,
            world_size,
            Status.RAISED,
            error_type="builtins.RuntimeError",
            message=f"rank {rank}'s outcome was not written by rank {rank}: its file in the run's folder was "
            "replaced by another process (another rank, or a program one started, can write there), so what it "
            "says is not used. This rank's own result is lost; the other ranks' results stand. Look for code "
            "that writes into the folder of its stdout (rank*.outcome files).",
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError) as error:
        return Outcome(
            rank,
            world_size,
            Status.RAISED,
            error_type="builtins.RuntimeError",
            message=f"rank {rank}'s record is unreadable: its outcome file is damaged ({type(error).__name__}: "
            f"{str(error)[:200]}). The rank's code may have written over barrierlab's files.",
        )


_OUTCOME_TYPES = {
    "rank": int,
    "world_size": int,
    "pid": int,
    "t_start": (int, float, type(None)),
    "t_end": (int, float, type(None)),
    "clock": (int, float),
    "exit_code": (int, type(None)),
    "error_type": str,
    "message": str,
    "traceback": str,
    "value_repr": str,
    "send_error": str,
    "replaced_by": str,
    "events_lost": str,
    "value": (bytes, type(None)),
    "exception": (bytes, type(None)),
}


def _check_types(outcome: Outcome) -> None:
    for name, kinds in _OUTCOME_TYPES.items():
        value = getattr(outcome, name)
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise TypeError(f"{name} is {type(value).__name__}")


def apply_outcome(result: RankResult, outcome: Outcome, t0: float, index: CodeIndex | None = None) -> None:
    """Fill ``result`` from the rank's :class:`~barrierlab._protocol.Outcome` (both launchers write one).

    ``t0`` is the instant, on the rank's monotonic clock, that counts as time 0 of the run."""
    result.status = outcome.status
    result.record_notes += outcome.notes
    result.pid = result.pid or outcome.pid or None
    result.traceback = tidy(relabel_traceback(outcome.traceback, index)) if outcome.traceback else ""
    result.exit_code = outcome.exit_code
    result.started = None if outcome.t_start is None else outcome.t_start - t0
    result.ended = None if outcome.t_end is None else outcome.t_end - t0
    result._pickled = (outcome.value, outcome.exception)
    result._message = outcome.message
    if outcome.events_lost:  # attack28 a12: read as a rank that made no call
        result.events_lost = outcome.events_lost
        result.record_notes.append(
            f"its events file was {outcome.events_lost} while it ran (another process did it): what it called "
            "and accessed is not known"
        )
    if outcome.send_error:
        result.exception = TypeError(
            f"rank {result.rank} finished, but {outcome.send_error} cannot be sent back to the notebook. "
            "Return plain data (numbers, strings, lists, dicts, tensors) instead."
        )
    elif outcome.status in (Status.RAISED, Status.SETUP_FAILED):
        result.exception = rebuild_exception(outcome.error_type, outcome.message)
    unread = outcome.unread.get("value")
    if unread and outcome.status == Status.FINISHED and not outcome.send_error:
        result.status = Status.RAISED
        result.exception = RuntimeError(
            f"rank {result.rank} returned {unread}: its value is not handed back to the notebook (values of at "
            f"most {VALUE_LIMIT >> 20} MiB pickled are, within the run's deadline); write large results to a file "
            "and return its path"
        )
    elif outcome.status == Status.FINISHED and outcome.value is None:
        result.value = outcome.value_repr or None


def from_records(folder: str) -> Run:
    """A :class:`~barrierlab.result.Run` rebuilt from a record folder (statuses, errors, events, call sites).

    The folder may hold the records of several machines copied together: ranks' monotonic clocks differ
    between machines, so every rank's times are placed on the wall clock through the anchor it noted
    (``time.time() - time.monotonic()``), and time 0 is the earliest rank's start.
    """
    present = _files.rank_files(folder)  # refuses symlinks, FIFOs, odd entries and ranks beyond the maximum
    ranks_found = sorted(r for r, kinds in present.items() if kinds & {"events", "outcome"})
    outcomes = {r: _read_outcome(RankFiles(folder, r).outcome, r, 0, pickles=False) for r in ranks_found}
    metas = {r: event_files.read_meta(RankFiles(folder, r).events) for r in ranks_found}
    # a record that names another rank than its file's is a copy (attack23 a03: rank3.* saved as rank5.*): beyond
    # the world the other records agree on, it is left out rather than make up the ranks between
    named = {r: _named_rank(r, outcomes.get(r), metas.get(r)) for r in ranks_found}
    agreed = _agreed_world(outcomes, named)
    copies = [r for r in ranks_found if named[r] not in (None, r) and agreed is not None and r >= agreed]
    ranks_found = [r for r in ranks_found if r not in copies]
    claims = [
        o.world_size - 1 for r, o in outcomes.items() if o and o.world_size <= _files.MAX_RANKS and r not in copies
    ]
    world_size = max(ranks_found + claims, default=-1) + 1  # a claim beyond the maximum is not believed
    if world_size == 0:
        raise FileNotFoundError(
            f"no rank records (rank*.events, rank*.outcome) in {folder!r}: was {RECORD_DIR_VARIABLE} set for the ranks?"
        )
    anchors: dict[int, float] = {}  # rank -> wall-clock time minus monotonic time on that rank
    starts = []  # wall-clock time at which each rank started recording (or its function)
    refused: dict[int, str] = {}  # rank -> why its record's times were not believed
    for rank in ranks_found:
        meta, outcome = metas.get(rank), outcomes.get(rank)
        if meta and meta.get("wall") is not None and meta.get("t0") is not None:  # both optional in the grammar
            if not _is_clock(meta["wall"], meta["t0"]):
                refused[rank] = _clock_refused("its first line", meta["wall"], meta["t0"])
                continue
            anchors[rank] = meta["wall"] - meta["t0"]
            starts.append(meta["wall"])
        elif outcome and outcome.clock:
            start = outcome.t_start if outcome.t_start is not None else 0.0
            if not _is_clock(outcome.clock + start, start):
                refused[rank] = _clock_refused("its outcome", outcome.clock + start, start)
                continue
            anchors[rank] = outcome.clock
            if outcome.t_start is not None:
                starts.append(outcome.t_start + outcome.clock)
    base = min(starts, default=0.0)
    ranks, ends = [], []
    for rank in range(world_size):
        t0 = base - anchors.get(rank, base)  # this rank's monotonic time at the run's time 0
        files = RankFiles(folder, rank)
        recorded = bool(metas.get(rank)) and rank not in refused
        record = (
            event_files.read_record(files.events, rank=rank, t0=t0, keep_bytes=_bytes_kept(world_size))
            if recorded
            else None
        )
        if record is not None:
            record.events, strays = _within_span(record.events)
            if strays:
                refused[rank] = (
                    f"{strays} of its events have times not within {MAX_RECORD_SPAN:g} s of the run's start: left "
                    "out, the timeline could not place them"
                )
        events = record.events if record else []
        for event in (*events, *(record.outside if record else ())):
            if event.file:
                event.where = str(Site(event.file, event.line, event.func or ""))
        flight = record.flight if record else None
        result = RankResult(rank=rank, status=Status.LOST, events=events, flight=flight, recorded=rank in ranks_found)
        result.outside = record.outside if record else []
        result.record_notes += _notes(record) if record else []
        if rank in ranks_found:
            result.record_notes += _mismatch_notes(rank, named.get(rank), outcomes.get(rank), agreed)
        if rank in refused:
            result.record_notes.append(refused[rank])
        outcome = outcomes.get(rank)
        if outcome:
            apply_outcome(result, outcome, t0)
            if rank in refused and result.ended is not None and not abs(result.ended) <= MAX_RECORD_SPAN:
                result.ended = None
            if result.ended is not None:
                ends.append(result.ended)
        ranks.append(result)
    ends += [e.end for r in ranks for e in r.events if e.end is not None]
    run = Run(
        world_size=world_size, ranks=ranks, elapsed=max(ends, default=0.0), timeout=float("nan"), deadline=float("nan")
    )
    if copies:
        run.launcher_note = "; ".join(
            f"rank{r}.* left out: its record names rank {named[r]} of a {agreed}-rank run (a copy of that rank's files?)"
            for r in copies
        )
    return run


def _named_rank(rank: int, outcome, meta) -> int | None:
    """The rank a rank's own files say it is: another rank than ``rank`` if its events file's first line or its
    outcome names one (an outcome that names another rank is read as damaged, world size 0), else ``rank`` when
    either names it, else None."""
    said = meta.get("rank") if meta else None
    said = said if isinstance(said, int) and not isinstance(said, bool) else None
    told = outcome.rank if outcome is not None and outcome.world_size > 0 else None
    for name in (said, told):
        if name is not None and name != rank:
            return name
    return rank if rank in (said, told) else None


def _agreed_world(outcomes: dict, named: dict) -> int | None:
    """The world size most of the outcomes that name their own file's rank give (None without any)."""
    sizes: dict[int, int] = {}
    for rank, outcome in outcomes.items():
        if outcome is not None and named.get(rank) == rank and 0 < outcome.world_size <= _files.MAX_RANKS:
            sizes[outcome.world_size] = sizes.get(outcome.world_size, 0) + 1
    return max(sizes, key=lambda n: (sizes[n], n)) if sizes else None


def _mismatch_notes(rank: int, named: int | None, outcome, agreed: int | None) -> list[str]:
    """What in a rank's own files disagrees with the folder: the rank it names, the world size it was one of."""
    notes = []
    if named is not None and named != rank:
        notes.append(f"its files name rank {named}, not rank {rank}: a copy of another rank's files?")
    if outcome is not None and agreed is not None and outcome.world_size not in (0, agreed):
        notes.append(
            f"it was one of {outcome.world_size} ranks, the others' records of {agreed}: a file of another job?"
        )
    return notes


#: The wall clock a record may name (seconds since 1970): up to the year 2286. A rank's monotonic clock (seconds
#: since boot) is believed up to as much.
MAX_WALL_CLOCK = 1e10
#: How far from the run's start (seconds) a record's event may lie, once placed: about 30 years. A record that
#: names times beyond it (``barrierlab report`` reads folders it did not write: 1e308 is a finite JSON number)
#: has those events left out, with a note: the timeline's axis cannot span them (matplotlib raised "Axis limits
#: cannot be NaN or Inf", attack8 a7).
MAX_RECORD_SPAN = 1e9


def _is_clock(wall: float, t0: float) -> bool:
    """Whether a record's (wall-clock, monotonic) pair at its start can be times of a real machine."""
    return 0.0 <= wall <= MAX_WALL_CLOCK and abs(t0) <= MAX_WALL_CLOCK


def _clock_refused(where: str, wall: float, t0: float) -> str:
    return (
        f"{where} names a clock that is not a time (wall {wall:.6g}, monotonic {t0:.6g}): its events are left "
        "out (they cannot be placed beside the other ranks'); its outcome stands"
    )


def _within_span(events: list) -> tuple[list, int]:
    """``events`` without those whose start, end or completion lies beyond :data:`MAX_RECORD_SPAN` of the run's
    start, and how many were left out."""
    kept = [
        e
        for e in events
        if all(t is None or abs(t) <= MAX_RECORD_SPAN for t in (e.start, e.end, getattr(e, "done", None)))
    ]
    return kept, len(events) - len(kept)
