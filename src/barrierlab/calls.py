"""The run's collectives, numbered: each rank's calls in the group's order, from barrierlab's record of the
learner's calls and torch's flight record merged, and the ledger that shows them side by side.

The diagnosis decides from these numbers and the timeline draws them; neither computes them itself."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from barrierlab.chains import chain_of, parting
from barrierlab.events import Event, Flight, FlightEntry
from barrierlab.sites import Site
from barrierlab.words import issuer_phrase, rank_list

if TYPE_CHECKING:  # for annotations only: this module never imports the Run it reads
    from barrierlab.result import Run


#: Calls that make a process group. torch 2.13 runs no collective on the parent group for them
#: (``_new_group_with_tag``: on gloo the new group's members connect to each other through the store, with the new
#: group's timeout, and the other ranks return at once; a store barrier only under TORCH_DIST_INIT_BARRIER=1), so
#: they take no place in the group's sequence and the flight recorder does not list them: torch names the groups
#: a rank makes by its count of these calls.
GROUP_MAKERS = frozenset({"new_group", "new_subgroups", "new_subgroups_by_enumeration", "init_device_mesh"})


def call_numbers(calls: list[Event]) -> list[int]:
    """The number the ledger, the timeline and the diagnosis give each of a rank's calls on one group (given in
    order, as :func:`collectives` lists them): a collective's place among the rank's collectives on the group, a
    group-making call's (:data:`GROUP_MAKERS`) among its group-making calls, which torch numbers apart (review78d
    D1: "barrier #3" in the diagnosis for the ledger's row 1, two ``new_group`` calls counted before it)."""
    made = other = 0
    numbers = []
    for e in calls:
        if e.name in GROUP_MAKERS:
            made += 1
            numbers.append(made)
        else:
            other += 1
            numbers.append(other)
    return numbers


def collectives(run: Run) -> dict[int, list[Event]]:
    """Each rank's collective calls on the default group made by the learner's code, in order. Calls pair by
    position within their own process group: a subgroup's calls (``Event.group``) are left out here, as the
    flight record's positions leave them out, so ranks of different subgroups are never compared. A rank of
    which nothing was read (``RankResult.recorded``), or whose events file another process removed or replaced
    (``RankResult.events_lost``), is left out: its calls are unknown, not none."""
    return {
        r.rank: sorted((e for e in r.events if e.is_collective and e.group is None), key=lambda e: e.seq)
        for r in run.ranks
        if r.recorded and not r.events_lost
    }


def flights(run: Run) -> dict[int, Flight]:
    """Each rank's copy of torch's flight recorder, for the ranks where it could be read."""
    found = {}
    for r in run.ranks:
        flight = r.flight
        if flight is None:
            continue
        if not isinstance(flight, Flight):  # the launcher's plain (op, seq, state) list: no issuers or frames
            flight = Flight([FlightEntry(r.rank, int(seq), str(op)) for op, seq, _state in flight])
        found[r.rank] = flight
    return found


@dataclass
class Call:
    """One collective on one rank, from whichever record saw it: the learner's own call (``event``), one
    that torch issued (``issuer`` says who: DDP, DTensor, ...), or both records of the same call.

    ``position`` is the call's place in its group's sequence when the flight recorder saw it (gloo pairs
    calls by it), else the learner's call number. ``start``/``end`` come from barrierlab's record; torch's
    flight recorder on gloo records when a call was issued (``start``) but never when it completed."""

    rank: int
    position: int
    op: str
    group: str = "0"  # the process group's name: "0" is the default group
    issuer: str | None = None
    event: Event | None = None
    entry: FlightEntry | None = None

    @property
    def kind(self) -> str:
        """ "yours" for a call the learner's code made, "torch" for one torch issued itself."""
        return "torch" if self.issuer else "yours"

    @property
    def name(self) -> str:
        return self.event.name if self.event else self.op

    @property
    def start(self) -> float | None:
        return self.event.start if self.event else (self.entry.start if self.entry else None)

    @property
    def end(self) -> float | None:
        return self.event.end if self.event else None

    @property
    def sizes(self):
        return self.entry.sizes if self.entry and self.entry.sizes is not None else (self.event and self.event.sizes)

    @property
    def site(self) -> Site | None:
        source = self.event or self.entry
        return Site(source.file, source.line, source.func or "") if source and source.file else None

    @property
    def where(self) -> str:
        source = self.event or self.entry
        if source is None or not source.file:
            return "an unknown line"
        return source.where or f"{source.file}:{source.line}"

    @property
    def label(self) -> str:
        """'barrier' for the learner's own call, "all_reduce (DDP backward's gradient all_reduce)" else."""
        return f"{self.op} ({self.issuer})" if self.issuer and self.issuer != self.op else self.name


def collective_calls(run: Run) -> dict[int, list[Call]]:
    """Every rank's collectives in the group's order, merging both records: torch's flight recorder where
    every rank's could be read (positions are its sequence ids in the default group, p2p and subgroups left
    out), else barrierlab's record of the learner's calls. This is what the ledger shows and what a
    timeline can draw: ``kind`` "torch" calls have a ``start`` (when torch issued them) and no ``end``."""
    found = flights(run)
    learners = collectives(run)
    if run.ranks and len(found) == len(run.ranks):
        merged = {}
        for rank, flight in found.items():
            listed, offset, last = [], 0, 0
            for e in flight:  # in the order torch recorded them
                if e.p2p or e.group != "0":
                    continue
                if e.seq + offset <= last:
                    # the default group was destroyed and made again: its sequence starts over at 1; its calls
                    # follow the old group's (attack19 a05: the two groups' calls were merged by number)
                    offset = last
                last = e.seq + offset
                listed.append(Call(rank, last, e.op, e.group, e.issuer, e.call, e))
            merged[rank] = _with_unlisted(rank, listed, learners.get(rank, []))
        return merged
    cut = {r for r, d in (getattr(run, "events_dropped", None) or {}).items() if d and d.cuts_order}
    numbered = {}
    for rank, calls in learners.items():
        calls = [e for e in calls if e.name not in GROUP_MAKERS]  # no place in the sequence, as in the flight record
        # a record cut in the middle keeps its first and last calls: their own numbers say where they stood
        numbers = [e.seq for e in calls] if rank in cut else call_numbers(calls)
        numbered[rank] = [Call(rank, n, e.name, event=e) for n, e in zip(numbers, calls)]
    return numbered


#: Learner calls torch numbers in the group's sequence without a flight-recorder entry, and how many positions
#: each takes: gloo's ``monitored_barrier`` sends and receives through the group, two sequence numbers
#: (measured on 2.13: a barrier after one is the group's call #3).
UNLISTED_WIDTH = {"monitored_barrier": 2}


def _with_unlisted(rank: int, listed: list[Call], learners: list[Event]) -> list[Call]:
    """A rank's flight-recorded calls plus the learner's calls torch numbered but did not list (attack15 a13:
    the ledger left out ``monitored_barrier``). Each takes the positions after the learner's call before it,
    when they are free and come before the learner's next listed call; a call before the first listed one is
    placed only when the record starts at the group's first position (else the flight recorder's buffer may
    have dropped older calls, and where it stood is unknown)."""
    at: dict[int, int] = {}  # id(learner's event) -> its last position in the flight record
    for c in listed:
        if c.event is not None:
            at[id(c.event)] = max(at.get(id(c.event), 0), c.position)
    if len(at) == len(learners):
        return listed
    taken = {c.position for c in listed}
    first_listed = next((i for i, e in enumerate(learners) if id(e) in at), len(learners))
    leading = sum(UNLISTED_WIDTH.get(e.name, 0) for e in learners[:first_listed])
    next_listed = [math.inf] * (len(learners) + 1)  # the least position of a listed call from index i on
    for i in range(len(learners) - 1, -1, -1):
        next_listed[i] = min(next_listed[i + 1], at.get(id(learners[i]), math.inf))
    added = []
    before = 0
    for i, event in enumerate(learners):
        if id(event) in at:
            before = at[id(event)]
            continue
        width = UNLISTED_WIDTH.get(event.name) or (1 if _never_reached_group(event, next_listed[i + 1]) else 0)
        if not width:
            continue
        span = range(before + 1, before + 1 + width)
        if (
            (before or min(taken, default=1) <= 1 + leading)
            and not taken.intersection(span)
            and span[-1] < next_listed[i + 1]
        ):
            added.append(Call(rank, span[0], event.name, event=event))
            taken.update(span)
            before = span[-1]
    return sorted(listed + added, key=lambda c: c.position)


def _never_reached_group(event: Event, next_listed: float) -> bool:
    """A learner's call after the rank's last one torch's flight recorder lists, that did not return: it failed or
    waited before reaching the group, which then gave it no entry (review78d D3: under TORCH_DISTRIBUTED_DEBUG=DETAIL
    the check of every collective against the other ranks' raised, or waited, first; the ledger said "no
    collective calls were recorded" beside a diagnosis naming every rank's call)."""
    returned = event.end is not None and not event.error
    return next_listed == math.inf and not returned and event.name not in GROUP_MAKERS


def positions_in_group(run: Run, events: dict[int, Event]) -> dict[int, int]:
    """Where the ledger puts each rank's given learner call: its position in the group's sequence (the first,
    for a call torch runs as two, like ``broadcast_object_list``); empty when the ledger numbers calls by the
    learner's call number (a flight record could not be read)."""
    if len(flights(run)) != len(run.ranks):
        return {}
    calls = collective_calls(run)
    found = {}
    for rank, event in events.items():
        positions = [c.position for c in calls.get(rank, []) if c.event is event]
        if positions:
            found[rank] = min(positions)
    return found


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def where_text(event) -> str:
    return event.where or (f"{event.file}:{event.line}" if event.file else "an unknown line")


def site_key(event: Event) -> tuple:
    return (event.file, event.line)


def _chain_note(by_rank: dict[int, dict[int, Call]], positions: list[int]) -> list[str]:
    """Under the table, for the first row where the ranks disagree: each rank's chain of the learner's lines
    that led to its call, when one of them went through more than one helper (a cell says only '@ line N')."""
    for position in positions:
        row = {rank: calls.get(position) for rank, calls in by_rank.items()}
        if len({call.name if call else None for call in row.values()}) < 2:
            continue
        made = {rank: call for rank, call in row.items() if call is not None}
        chains = {rank: chain_of(call.event or call.entry) for rank, call in made.items()}
        if all(len(chain.shown) < 3 for chain in chains.values()):
            return []  # the cells' lines and the diagnosis's "called from" say it all
        groups: dict[tuple, list[int]] = {}
        for rank, chain in chains.items():
            groups.setdefault(tuple(chain.frames), []).append(rank)
        at = parting(chains.values())
        texts = [f"{rank_list(rs)}'s {made[rs[0]].name} {_lines_of(chains[rs[0]], at)}" for rs in groups.values()]
        return [f"(#{position} came from: " + "; ".join(texts) + ")"]
    return []


def _lines_of(chain, at: int | None) -> str:
    """'from line 25 → line 12 (in gather_all) → line 7 (in one)': the chain's lines, outermost first (a frame
    in another file than the one before as ``file:line``), each function named where the chain enters it, the
    line where the ranks' paths part marked ▸."""
    shown = chain.shown
    first = len(chain.frames) - len(shown)
    parts = []
    for i, site in enumerate(shown):
        other_file = i and site.file != shown[i - 1].file
        text = site.place if other_file else f"line {site.line}"
        text += f" (in {site.func})" if i and site.func != shown[i - 1].func else ""
        parts.append(("▸ " if at is not None and i == at - first else "") + text)
    if len(parts) > 6:
        parts = parts[:3] + [f"… {len(parts) - 6 + chain.left_out} more"] + parts[-3:]
    return "from " + " → ".join(parts)


def subgroup_calls(run: Run) -> dict[str, tuple[tuple[int, ...], dict[int, list[Event]]]]:
    """Each subgroup the learner's code called collectives on: its members (as recorded, empty if never) and each
    member's calls on it in order. Subgroups are numbered apart from the default group (:func:`collectives`).
    A group is its name and its members as each rank saw them: ranks that made their groups in different orders
    or from different lists hold different groups under one name (attack27 a12: a "subgroup of ranks [0, 1]"
    table with a column for rank 3)."""
    groups: dict[str, tuple[tuple[int, ...], dict[int, list[Event]]]] = {}
    for r in run.ranks:
        for e in r.events:
            if e.is_collective and e.group is not None:
                key = e.group if not e.group_ranks else f"{e.group} {sorted(e.group_ranks)}"
                members, mine = groups.get(key, ((), {}))
                groups[key] = (members or tuple(e.group_ranks or ()), mine)
                mine.setdefault(r.rank, []).append(e)
    return groups


def _state(e: Event | None) -> str:
    """' (never left)', ' (end not read)' or ' (failed)' for a call that did not return, else ''."""
    if e is None or (e.end is not None and not e.error):
        return ""
    if e.end is None:
        return " (never left)" if e.never_left else " (end not read)"
    return " (failed)"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in (header, *rows)]


def _subgroup_tables(run: Run) -> list[str]:
    """One table per subgroup: each member's calls by their position in that group's own sequence (attack15 a06:
    a mismatch on a subgroup left the ledger saying no calls)."""
    lines: list[str] = []
    for members, mine in subgroup_calls(run).values():
        ranks = sorted(set(members) | set(mine))
        rows = []
        for k in range(max(len(v) for v in mine.values())):
            row = [str(k + 1)]
            for r in ranks:
                calls = mine.get(r, [])
                e = calls[k] if k < len(calls) else None
                row.append("—" if e is None else (f"{e.name} @ line {e.line}" if e.line else e.name) + _state(e))
            rows.append(row)
        lines.append(f"subgroup of ranks {list(members) if members else ranks} (its own sequence):")
        lines += _table(["#"] + [f"rank {r}" for r in ranks], rows)
    return lines


def _torch_call_state(run: Run, call: Call, mine: list[Call]) -> str:
    """' (failed)' or ' (never left)' for a collective torch issued itself (DDP's gradient all_reduce) that is the
    rank's last on the group, when the rank raised through, or was stopped at, the learner's line that led there:
    gloo's flight recorder says nothing of a call's end (review78d D4: the ledger showed torch's all_reduce of ranks
    that raised in it as if it had completed)."""
    entry = call.entry
    if entry is None or not entry.file or not entry.line or call is not mine[-1]:
        return ""
    result = run[call.rank]
    if result.status == "raised":
        return " (failed)" if f'File "{entry.file}", line {entry.line},' in result.traceback else ""
    stuck = result.stuck
    if result.status == "stopped at deadline" and stuck is not None:
        return " (never left)" if any((s.file, s.line) == (entry.file, entry.line) for s in stuck.frames) else ""
    return ""


def ledger(run: Run) -> str:
    """A table of every rank's collectives side by side, by position in the group's sequence (torch's flight
    recorder, so collectives torch issued from C++ appear too), or by the learner's call number when a
    rank's flight record could not be read: the first place they disagree stands out."""
    calls = collective_calls(run)
    positions = sorted({c.position for cs in calls.values() for c in cs})
    header = ["#"] + [f"rank {r}" for r in calls]
    by_rank = {r: {c.position: c for c in cs} for r, cs in calls.items()}
    rows = []
    for position in positions:
        row = [str(position)]
        for rank in calls:
            call = by_rank[rank].get(position)
            if call is None:
                row.append("—")
                continue
            e = call.event
            state = _state(e) if e is not None else _torch_call_state(run, call, calls[rank])
            source = e or call.entry
            text = call.name if not call.issuer else f"{call.op} · {issuer_phrase(call.issuer)}"
            row.append(f"{text} @ line {source.line}{state}" if source is not None and source.line else text + state)
        rows.append(row)
    lines = _table(header, rows)
    subgroups = _subgroup_tables(run)
    if not rows:
        return (
            "\n".join(["no collective calls on the default group were recorded", *subgroups])
            if subgroups
            else ("no collective calls were recorded")
        )
    lines += _chain_note(by_rank, positions)
    found = flights(run)
    if len(found) == len(run.ranks):
        unplaced = {c.name for cs in calls.values() for c in cs if c.entry is None}
        unlisted = sorted(n for n in unplaced if n in UNLISTED_WIDTH)
        before = sorted(unplaced - set(unlisted))
        lines.append(
            "(# is the position in the group's sequence, from torch's flight recorder; "
            "'·' marks collectives torch issued itself, with the learner's line that led there"
            + (
                "; a call that failed or waited before it reached the group (TORCH_DISTRIBUTED_DEBUG=DETAIL's check "
                "of each collective against the other ranks', for one) has no entry there: barrierlab's record "
                "places it after the rank's last listed call"
                if before
                else ""
            )
            + (
                f"; {' and '.join(unlisted)} take{'s' if len(unlisted) == 1 else ''} two positions and "
                "torch's flight recorder does not list "
                + ("it" if len(unlisted) == 1 else "them")
                + ", so barrierlab's record places "
                + ("it" if len(unlisted) == 1 else "them")
                if unlisted
                else ""
            )
            + ")"
        )
    elif found:
        unread = [r.rank for r in run.ranks if r.rank not in found and r.recorded]
        missing = [r.rank for r in run.ranks if not r.recorded]
        why = [f"torch's flight recorder could not be read from {rank_list(unread)}"] if unread else []
        why += [f"nothing of {rank_list(missing)} is in the record folder"] if missing else []
        lines.append(f"(# is each rank's own call number: {'; '.join(why)})")
    return "\n".join([*lines, *subgroups])
