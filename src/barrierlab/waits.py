"""A run's numbers: how long each rank was busy and waited, when each collective let the ranks go, and which
rank held the others up.

``measure(run)`` (or ``run.waits()``) returns them as a frozen :class:`Waits` a notebook can assert on;
``Waits.table()`` prints them, ``Waits.summary()`` says them in a line.  ``barrierlab.plot`` draws them and
decides nothing; this module draws nothing.  Standard library only.
"""

from __future__ import annotations

import bisect
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from barrierlab.calls import GROUP_MAKERS, collective_calls
from barrierlab.events import HANDOFF_KINDS, WAITING_KINDS, Event
from barrierlab.ordering import KEY_WAITS

#: A straggler's wait must be below the others' median by more than this many seconds...
STRAGGLER_MIN_GAP = 0.020
#: ...and the others' median must be more than this many times the straggler's wait.
STRAGGLER_RATIO = 2.0
#: Span kinds that are a rank's own work (a "wait" span is waiting).
WORK_KINDS = ("compute", "io", "other")


@dataclass
class Lane:
    """One rank as the numbers and the drawings see it: its events and when its function ran (None: unknown /
    never)."""

    rank: int
    events: list[Event]
    start: float | None
    end: float | None
    status: str | None = None
    #: the learner's call number (Event.seq) -> its position in the group's sequence (run.ledger()'s #),
    #: or None when the calls are numbered by Event.seq (no flight record of every rank)
    positions: dict[int, int] | None = None
    #: collectives torch issued itself on this rank (calls.Call, kind "torch"), with a start time
    torch_calls: list = field(default_factory=list)
    #: the learner's call number (Event.seq) -> the number run.ledger() gives the call (``calls.collective_calls``,
    #: with or without a flight record); None for lanes not made from a Run (then Event.seq numbers them)
    numbers: dict[int, int] | None = None
    #: when the collective torch issued itself (DDP's buffer broadcast) that the rank ended inside began: the rank
    #: raised through it or was stopped in it (``calls._torch_call_state``); None: none. gloo records no end of a
    #: call torch issued, but this one's is known: the rank's (review92d M1: rank 0, blocked 3 s in DDP's
    #: broadcast until its timeout, was said to have waited 0.000 s, idle 0 %)
    ended_in_torch: float | None = None


class Release(NamedTuple):
    """The moment a collective every rank reached let them go: when the last rank arrived."""

    seq: int
    op: str
    time: float
    last_rank: int


@dataclass(frozen=True)
class RankWaits:
    """One rank's seconds: ``busy`` (active time minus ``wait``), ``wait`` (inside collectives, send/recv,
    ``Work.wait()`` and ``wait`` spans), ``idle_fraction`` = wait / active time, when its function started and
    ended (None: never), and how many collectives it entered."""

    busy: float
    wait: float
    idle_fraction: float
    start: float | None
    end: float | None
    collectives: int


@dataclass(frozen=True)
class Waits:
    """Per-rank busy and waiting seconds of a run, its releases, and which rank held the others up.

    - ``ranks``: rank -> :class:`RankWaits`.  ``wait`` is the union of the waiting intervals (nested events
      count once), clipped to the rank's active time; an event the rank never left counts until the rank
      ended, or until the run ended if the rank never did.  ``busy``: active time (function start to end, or
      to the end of the run) minus ``wait``; ``idle_fraction`` is 0 for a rank that never started.
    - ``slowest_rank``: among ranks that entered at least one collective, the one that waited least (ties:
      the lowest rank).  Arriving last at every barrier means never waiting at one, so this is the rank the
      others waited for; None if no rank entered a collective.
    - ``last_to_arrive``: ``slowest_rank`` only when it clearly held the others up: the median wait of the
      other ranks exceeds its wait by more than 20 ms and by more than 2x.  Otherwise None (ranks arrived
      about together, or there is only one rank).
    - ``last_at``: (k, n): that rank was last at k of the n releases whose arrivals spread over more than
      20 ms.  ``own_work``: names of spans only that rank ran (work assigned to it, e.g. a download).
    - ``straggler``: ``last_to_arrive`` only when it is a straggler in the usual sense: last at every one of
      at least two such releases, while doing the same work as the others (no ``own_work``).  A rank that was
      last once, last only sometimes, or busy with work assigned to it alone is "last to arrive", not a
      straggler.
    - ``releases``: each collective every rank reached as the same op, released when the last rank arrived
      (see :func:`find_releases`).
    - ``total``: the run's elapsed seconds; ``wait_total``: the sum of every rank's ``wait``.
    """

    ranks: Mapping[int, RankWaits]
    slowest_rank: int | None
    last_to_arrive: int | None
    last_at: tuple[int, int]
    own_work: tuple[str, ...]
    straggler: int | None
    releases: tuple[Release, ...]
    total: float
    wait_total: float
    #: rank -> events in the middle of its record that were not read (a very long record): their time is not in
    #: ``wait`` or ``releases`` (attack27 a10: waits counted from the kept events only, without saying so)
    not_read: Mapping[int, str] = field(default_factory=dict)
    #: 'barrier #30001' when another rank was still in that call at the end and ``last_to_arrive`` never reached
    #: it: the rank did not arrive late, it never arrived (review56 M2: a stuck run called it "last to arrive")
    never_arrived: str | None = None
    #: rank -> seconds in store calls that wait for a key (store.wait/get), which ``wait`` leaves out: a store
    #: wait is a hand-off, not a collective (review78d M2: "waited 0.000 s in all" of ranks stopped after 9 s in
    #: store.wait)
    store_wait: Mapping[int, float] = field(default_factory=dict)

    def _not_read_note(self) -> str:
        return f" ({not_read(self.not_read)}; their waits are not counted)" if self.not_read else ""

    @property
    def shown_last(self) -> int | None:
        """The rank to call "last to arrive": the others clearly waited for it, at most releases (or the only
        one); None when it is the straggler (called that instead) or when the last rank changed."""
        last, (k, n) = self.last_to_arrive, self.last_at
        if last is None or self.straggler is not None:
            return None
        return last if n == 0 or 2 * k > n else None

    def last_note(self) -> str:
        """'last to arrive', or 'last to arrive at 2 of 3' when it was not last every time, or 'never arrived at
        barrier #3' when the others were still waiting in a call it never reached."""
        if self.never_arrived is not None:
            return f"never arrived at {self.never_arrived}"
        k, n = self.last_at
        return "last to arrive" if k == n or n == 0 else f"last to arrive at {k} of {n}"

    def table(self) -> str:
        """The numbers as a plain-text table (rank, active s, waited s, idle %), the straggler marked."""
        rows = [f"{'rank':>4}  {'active s':>9}  {'waited s':>9}  {'idle %':>6}"]
        for rank, n in self.ranks.items():
            active = n.busy + n.wait
            never = f", and it never arrived at {self.never_arrived}" if self.never_arrived is not None else ""
            mark = (
                f"  <- straggler: the others waited for it{never}"
                if rank == self.straggler
                else f"  <- {self.last_note()}: the others waited for it"
                if rank == self.shown_last
                else ""
            )
            if n.start is None:
                mark = "  (never started)"
            elif n.end is None:
                mark += "  (never ended)"
            rows.append(f"{rank:>4}  {active:>9.3f}  {n.wait:>9.3f}  {100 * n.idle_fraction:>5.0f}%{mark}")
        rows.append(
            f"run: {self.total:.3f} s, all ranks waited {self.wait_total:.3f} s in total{self._not_read_note()}"
        )
        return "\n".join(rows)

    def summary(self) -> str:
        """One line: how long the ranks waited, and for whom."""
        idle = ", ".join(f"{100 * n.idle_fraction:.0f}%" for n in self.ranks.values())
        line = f"waited {self.wait_total:.3f} s in all (idle by rank: {idle}){self._not_read_note()}"
        store = sum(self.store_wait.values())
        if store >= 0.0005:
            line = (
                f"waited {self.wait_total:.3f} s in all in collectives, send/recv and work.wait() (idle by rank: "
                f"{idle}){self._not_read_note()}, and {store:.3f} s in store waits (store.wait/get), which those "
                "figures leave out"
            )
        if self.straggler is not None:
            never = f" and it never arrived at {self.never_arrived}" if self.never_arrived is not None else ""
            return f"{line}; rank {self.straggler} was the straggler: the others waited for it{never}"
        if self.shown_last is not None:
            was = "" if self.never_arrived is not None else "was "
            return f"{line}; rank {self.shown_last} {was}{self.last_note()}: the others waited for it"
        return line


def not_read(dropped: Mapping[int, object]) -> str:
    """'the middle of the records of ranks 0, 1 was not read (3,504, 3,504 events)': what the timeline's title and
    the waits say of records cut in the middle (``Run.events_dropped``: rank -> how many events, as words)."""
    ranks = sorted(dropped)
    who = f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))
    return f"the middle of the records of {who} was not read ({', '.join(str(dropped[r]) for r in ranks)} events)"


def drawn(events) -> list[Event]:
    """The events a lane holds: calls and spans of the rank's own process (its threads included). Store
    operations and file accesses are what the ordering model reads (``barrierlab.ordering``); a lane shows the
    time they took inside the spans around them. A child process forked from the rank (a DataLoader worker, a
    multiprocessing.Process) is not the rank: its calls are not the rank's waits (attack27 a04: a child stuck in
    all_reduce drew its rank "stuck in all_reduce #1", idle 100 %, while the rank waited in p.join())."""
    return [e for e in events if e.kind not in HANDOFF_KINDS and not e.in_child_process]


def lanes(
    run, ends: Sequence[float | None] | None = None, starts: Sequence[float | None] | None = None
) -> tuple[list[Lane], float]:
    """Normalise a Run, or a list of per-rank Event lists, into lanes and the run's total length."""
    if hasattr(run, "ranks"):
        positions, torch_calls, numbers = _numbering(run)
        ended_in = _ended_in_torch_calls(run)
        found = []
        for r in run.ranks:
            events = drawn(r.events)  # once per rank: a long record holds tens of thousands
            found.append(
                Lane(
                    r.rank,
                    events,
                    _first(r.started, events),
                    r.ended,
                    r.status,
                    positions.get(r.rank),
                    torch_calls.get(r.rank, []),
                    numbers.get(r.rank, {}),
                    ended_in.get(r.rank),
                )
            )
        total = float(run.elapsed)
    else:
        found = []
        for i, events in enumerate(run):
            events = sorted(drawn(events), key=lambda e: e.start)
            end = ends[i] if ends is not None else _last_end(events)
            start = starts[i] if starts is not None else _first(None, events)
            if start is None and end is not None:
                start = 0.0
            found.append(Lane(i, events, start, end))
        total = 0.0
    times = [t for lane in found for e in lane.events for t in (e.start, e.end) if t is not None]
    times += [c.start for lane in found for c in lane.torch_calls]
    times += [lane.end for lane in found if lane.end is not None]
    return found, max([total, *times])


def _numbering(run) -> tuple[dict[int, dict[int, int]], dict[int, list], dict[int, dict[int, int]]]:
    """From ``calls.collective_calls``: each rank's map from its call number to the call's position in the
    group's sequence (only when torch's flight recorder of every rank was read), the calls torch issued, and
    each rank's map from its call number to the ledger's number for the call, with or without a flight record
    (a subgroup's call and a ``new_group`` have none: review78d C3, a subgroup's all_reduce numbered #2 of the
    default group, after the new_group)."""
    calls = collective_calls(run)
    numbers: dict[int, dict[int, int]] = {}
    for rank, cs in calls.items():
        mine = numbers[rank] = {}
        for c in cs:
            if c.event is not None and c.event.seq:  # an object collective spans positions: its last names it
                mine[c.event.seq] = max(c.position, mine.get(c.event.seq, c.position))
    if not any(c.entry is not None for cs in calls.values() for c in cs):
        return {}, {}, numbers
    positions = numbers
    issued = {
        rank: sorted((c for c in cs if c.kind == "torch" and c.start is not None), key=lambda c: c.start)
        for rank, cs in calls.items()
    }
    return positions, issued, numbers


def _ended_in_torch_calls(run) -> dict[int, float]:
    """Rank -> when the collective torch issued itself from C++ (DDP's), that the rank raised through or was stopped
    in, began: the ledger's " (failed)" / " (never left)" of such a call (``calls._torch_call_state``)."""
    from barrierlab.calls import _torch_call_state

    found = {}
    for rank, cs in collective_calls(run).items():
        last = cs[-1] if cs else None
        if last is not None and last.kind == "torch" and last.event is None and last.start is not None:
            if _torch_call_state(run, last, cs):
                found[rank] = last.start
    return found


def number(event: Event, lane: Lane) -> int | None:
    """A collective's number, as ``run.ledger()`` gives it (``calls.collective_calls``): its position in the
    group's sequence when known, else the rank's own count of its collectives on the default group; None for a
    call the ledger does not number on the default group (a subgroup's, a ``new_group``)."""
    numbers = lane.numbers if lane.numbers is not None else lane.positions
    if numbers is None:
        return event.seq
    return numbers.get(event.seq) if event.seq else None


def _first(started: float | None, events: list[Event]) -> float | None:
    if started is not None:
        return started
    return min((e.start for e in events), default=None)


def _last_end(events: list[Event]) -> float | None:
    if not events or any(e.never_left for e in events):
        return None
    return max((e.end for e in events if e.end is not None), default=None)


def window(lane: Lane, total: float) -> tuple[float, float] | None:
    """The rank's active time: function start to end, or to the end of the run if it never ended."""
    if lane.start is None:
        return None
    return lane.start, max(lane.start, lane.end if lane.end is not None else total)


def event_end(event: Event, lane: Lane, total: float) -> float:
    """Where an event stops in time; one never left lasts until its rank (or the run) ended."""
    if event.end is not None:
        return event.end
    if event.end_not_read:  # it ended in the part of the record not read: when is not known, so no time is drawn
        return event.start
    return lane.end if lane.end is not None else total


def _union_length(intervals: list[tuple[float, float]]) -> float:
    length, reach = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > reach:
            length += b - max(a, reach)
            reach = b
    return length


def _merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``intervals`` sorted and merged: disjoint, in order."""
    merged: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _outside(a: float, b: float, covered: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of ``[a, b]`` outside ``covered`` (disjoint intervals in order: :func:`_merged`)."""
    pieces, at = [], a
    for c, d in covered[max(0, bisect.bisect_left(covered, (a, a)) - 1) :]:
        if d <= at:
            continue
        if c >= b:
            break
        if c > at:
            pieces.append((at, c))
        at = max(at, d)
        if at >= b:
            break
    if at < b:
        pieces.append((at, b))
    return pieces


def _rank_waits(lane: Lane, total: float) -> RankWaits:
    active_window = window(lane, total)
    active = 0.0 if active_window is None else active_window[1] - active_window[0]
    waits, working = [], []
    if active_window is not None:
        for e in lane.events:
            if e.kind in WAITING_KINDS or e.kind in WORK_KINDS:
                a, b = max(e.start, active_window[0]), min(event_end(e, lane, total), active_window[1])
                if b > a:
                    (waits if e.kind in WAITING_KINDS else working).append((a, b, e.lane))
        if lane.ended_in_torch is not None:  # on the rank's own thread, until the rank (or the run) ended
            a, b = max(lane.ended_in_torch, active_window[0]), active_window[1]
            if b > a:
                waits.append((a, b, None))
    # a thread's wait while another thread of the rank works in a span (a background barrier beside the main
    # thread's compute: attack19 a12) is not the rank waiting: only time no other thread worked counts
    covered: dict[object, list[tuple[float, float]]] = {}
    for own in {own for _, _, own in waits}:
        covered[own] = _merged([(c, d) for c, d, other in working if other != own])
    wait = _union_length([piece for a, b, own in waits for piece in _outside(a, b, covered[own])])
    return RankWaits(
        busy=active - wait,
        wait=wait,
        idle_fraction=wait / active if active > 0 else 0.0,
        start=lane.start,
        end=lane.end,
        # a group-making call is no collective of a group's sequence: a rank that made only a new_group took part in
        # none (review78d C3: a non-member of the subgroup, blamed as the rank the members waited for)
        collectives=sum(e.kind == "collective" and e.name not in GROUP_MAKERS for e in lane.events),
    )


def _slowest(ranks: dict[int, RankWaits]) -> int | None:
    takers = [r for r, n in ranks.items() if n.collectives]
    return min(takers, key=lambda r: (ranks[r].wait, r), default=None)


def _last_to_arrive(ranks: dict[int, RankWaits], slowest: int | None) -> int | None:
    """``slowest`` if the others clearly waited for it (by > 20 ms and > 2x its own wait), else None."""
    if slowest is None:
        return None
    others = [n.wait for r, n in ranks.items() if n.collectives and r != slowest]
    if not others:
        return None
    mine, median = ranks[slowest].wait, statistics.median(others)
    return slowest if median - mine > STRAGGLER_MIN_GAP and median > STRAGGLER_RATIO * mine else None


def work_name(name: str) -> str:
    """A span's name without its step number: 'forward 2' -> 'forward', 'wait(barrier#3)' and the recorder's
    'Work.wait' -> 'Work.wait()' (one legend entry: review53b saw "Work.wait(), Work.wait" in 05's figure)."""
    if name == "Work.wait" or (name.startswith("wait(") and name.endswith(")")):
        return "Work.wait()"
    return re.sub(r"[\s,#:]*\d+$", "", name) or name


def _own_work(found: list[Lane], rank: int) -> tuple[str, ...]:
    """Span names (step numbers dropped) that only ``rank`` ran: work assigned to it, e.g. rank 0's download."""

    def names(lane: Lane) -> set[str]:
        return {work_name(e.name) for e in lane.events if e.kind in WORK_KINDS}

    mine = names(next(lane for lane in found if lane.rank == rank))
    others = set().union(*(names(lane) for lane in found if lane.rank != rank))
    return tuple(sorted(mine - others))


def _arrival_counts(found: list[Release], lanes_: list[Lane]) -> tuple[dict[int, int], int]:
    """How often each rank was last at a release the others had to wait for (arrivals > 20 ms apart)."""
    counts: dict[int, int] = {}
    telling = 0
    first: dict[object, float] = {}  # a call's number -> the earliest arrival at it (one pass: attack19 a13)
    for lane in lanes_:
        for e in lane.events:
            if e.kind == "collective":
                seq = number(e, lane)
                if seq not in first or e.start < first[seq]:
                    first[seq] = e.start
    for release in found:
        earliest = first.get(release.seq)
        if earliest is not None and release.time - earliest > STRAGGLER_MIN_GAP:
            telling += 1
            counts[release.last_rank] = counts.get(release.last_rank, 0) + 1
    return counts, telling


def _never_arrived(found: list[Lane], rank: int | None) -> str | None:
    """'barrier #7' when another rank never left collective #7 and ``rank`` made no call numbered 7 or later."""
    if rank is None:
        return None
    stuck = [
        (e.start, seq, e.name)
        for lane in found
        if lane.rank != rank
        for e in lane.events
        if e.kind == "collective" and e.never_left and (seq := number(e, lane)) is not None
    ]
    if not stuck:
        return None
    _, seq, op = min(stuck)
    mine = next(lane for lane in found if lane.rank == rank)
    reached = [n for e in mine.events if e.kind == "collective" and (n := number(e, mine)) is not None]
    return f"{op} #{seq}" if not reached or max(reached) < seq else None


def _another_never_came(found: list[Lane], rank: int) -> bool:
    """Whether a rank other than ``rank`` never reached a collective of the default group that another rank entered
    and did not complete (failed in it, or never left it): the others waited there for that rank, which
    ``_last_to_arrive`` cannot name, as it made no call there (review92d M4: rank 1 raised before the barrier,
    rank 2 reached it after rank 1 had gone and failed at once, and was called "last to arrive: the others waited
    for it" while rank 0 waited for rank 1)."""
    reached = {
        lane.rank: max((n for e in lane.events if e.kind == "collective" and (n := number(e, lane))), default=0)
        for lane in found
    }
    unfinished = [
        n
        for lane in found
        for e in lane.events
        if e.kind == "collective" and e.group is None and (e.never_left or e.error) and (n := number(e, lane))
    ]
    return any(reached[lane.rank] < n for n in unfinished for lane in found if lane.rank != rank)


def from_lanes(found: list[Lane], total: float) -> Waits:
    """The numbers of lanes (see :func:`lanes`) over a run ``total`` seconds long."""
    ranks = {lane.rank: _rank_waits(lane, total) for lane in found}
    slowest = _slowest(ranks)
    last = _last_to_arrive(ranks, slowest)
    if last is not None and _another_never_came(found, last):
        last = None
    released = find_releases(found)
    counts, telling = _arrival_counts(released, found)
    own = _own_work(found, last) if last is not None else ()
    always_last = last is not None and telling >= 2 and counts.get(last, 0) == telling
    return Waits(
        ranks=ranks,
        slowest_rank=slowest,
        last_to_arrive=last,
        last_at=(counts.get(last, 0) if last is not None else 0, telling),
        own_work=own,
        straggler=last if always_last and not own else None,
        releases=tuple(released),
        total=total,
        wait_total=sum(n.wait for n in ranks.values()),
        never_arrived=_never_arrived(found, last),
    )


def measure(run, ends: Sequence[float | None] | None = None, *, starts: Sequence[float | None] | None = None) -> Waits:
    """The numbers of a run (:class:`Waits`): per-rank busy and waiting seconds, releases, who held the others up.

    ``run`` is a :class:`~barrierlab.result.Run`, or a list with one list of Events per rank; then ``ends`` (and
    ``starts``) give when each rank's function ended (began): by default the last event's end (None if an
    event never ended) and the first event's start (0, the launch, if it has no events but an end).
    """
    laid, total = lanes(run, ends, starts)
    found = from_lanes(laid, total)
    dropped = {rank: str(d) for rank, d in (getattr(run, "events_dropped", None) or {}).items() if d}
    found = replace(found, not_read=dropped) if dropped else found
    events = [r.events for r in run.ranks] if hasattr(run, "ranks") else list(run)
    store = {lane.rank: _store_seconds(lane, own, total) for lane, own in zip(laid, events)}
    return replace(found, store_wait=store) if any(store.values()) else found


def _store_seconds(lane: Lane, events: list[Event], total: float) -> float:
    """Seconds the rank's own process spent in store calls that wait for a key, clipped to its active time (a
    call never left counts until the rank ended, or the run did). A rank whose lane has no start (no call of its
    own drawn, its function's start not known: stopped in its first store wait) is active from its first wait."""
    waits = [e for e in events if e.kind == "store" and e.name in KEY_WAITS and not e.in_child_process]
    if not waits:
        return 0.0
    active = window(lane, total)
    if active is None:
        first = min(e.start for e in waits)
        active = (first, max(first, lane.end if lane.end is not None else total))
    spans = []
    for e in waits:
        a, b = max(e.start, active[0]), min(event_end(e, lane, total), active[1])
        if b > a:
            spans.append((a, b))
    return _union_length(spans)


def find_releases(found: list[Lane]) -> list[Release]:
    """Each collective that every rank reached as the same op, released when the last rank arrived.

    Collectives are matched by their number: their position in the group's sequence when torch's flight
    recorder of every rank was read (as ``run.ledger()`` numbers them), else each rank's own call number
    (``Event.seq``).  Collectives torch issued itself are not included: gloo records no end for them. Nor is a
    call no rank ever left: nothing released it (attack25 a11: a DataLoader worker's barrier, which never
    returned, drawn as released; a lane holds no forked child's calls, see :func:`drawn`).
    """
    per_rank = [
        {number(e, lane): e for e in lane.events if e.kind == "collective" and number(e, lane)} for lane in found
    ]
    if not per_rank:
        return []
    released = []
    for seq in sorted(set.intersection(*(set(numbered) for numbered in per_rank))):
        arrivals = [(numbered[seq].start, lane.rank) for numbered, lane in zip(per_rank, found)]
        names = {numbered[seq].name for numbered in per_rank}
        if len(names) == 1 and any(numbered[seq].end is not None for numbered in per_rank):
            time, last = max(arrivals)
            released.append(Release(seq, names.pop(), time, last))
    return released


def function_seconds(run) -> float | None:
    """Seconds from the first rank starting the function to the last rank returning (launch cost excluded)."""
    starts = [r.started for r in run if r.started is not None]
    ends = [r.ended for r in run if r.ended is not None]
    return max(ends) - min(starts) if starts and len(ends) == run.world_size else None
