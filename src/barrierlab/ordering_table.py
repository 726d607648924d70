"""What a recorded run's calls order, as tables the lessons print: on gloo as the run recorded it, and on NCCL
as the ordering model (:mod:`barrierlab.ordering`) derives it from the same record and the ops table.

Two questions, both asked of :class:`barrierlab.ordering.Order`:

- **Does one phase happen before another?** :func:`phase_before` and :func:`handoff_table`: "rank 3's write
  before rank 0's read", for a run per call (06 §6), each row with the answer on gloo and on NCCL.
- **Who waits for whom?** :func:`waits`: every call on every rank whose return the model orders after other
  ranks' arrival (its direct edges: a barrier waits for every rank, a broadcast's non-root for the root, a
  ``store.wait`` for the rank that set the key). :func:`nccl_view` compares gloo's waits with NCCL's and the
  file handoffs gloo orders with NCCL's (:func:`barrierlab.ordering.lost_on_nccl`): which of this run's
  orderings would not hold on GPUs, seen from the host.

The NCCL answers are the model's, not a measurement: the host's view (a collective returns once enqueued;
``barrier`` and the object collectives that copy sizes to the CPU block it), CUDA streams not modelled, each
group's communicator already formed (a lazily formed group's first collective holds every rank: not shown).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from barrierlab import ordering
from barrierlab.sites import Site


def _event(run, rank: int, name: str):
    for event in run[rank].events:
        if event.name == name:
            return event
    raise ValueError(f"rank {rank} recorded no event named {name!r}")


def phase_before(run, first: tuple[int, str], then: tuple[int, str], backend: str = "gloo") -> bool:
    """Everything rank ``first[0]`` did up to the end of its first event named ``first[1]`` (a span or a call)
    happens before rank ``then[0]``'s first event named ``then[1]`` begins, on ``backend``: a path of the
    model's edges orders them, whatever the clock says."""
    (rank_a, name_a), (rank_b, name_b) = first, then
    a, b = _event(run, rank_a, name_a), _event(run, rank_b, name_b)
    if a.end is None:
        return False
    return ordering.order(run, backend).ordered_at(rank_a, a.end, rank_b, b.start)


@dataclass(frozen=True)
class HandoffRow:
    """One run of a hand-over: its label, and whether ``first`` happens before ``then`` on each backend."""

    label: str
    gloo: bool
    nccl: bool


def handoff_table(runs: Mapping[str, object], first: tuple[int, str], then: tuple[int, str]) -> list[HandoffRow]:
    """For each labelled run: does ``first`` happen before ``then`` (see :func:`phase_before`) on gloo, as
    recorded, and on NCCL, as the model derives it from the same record?"""
    if not runs:
        raise ValueError("runs must name at least one run")
    return [
        HandoffRow(label, phase_before(run, first, then, "gloo"), phase_before(run, first, then, "nccl"))
        for label, run in runs.items()
    ]


@dataclass(frozen=True)
class Wait:
    """A call on ``rank`` whose return the model orders after the arrival of the ranks in ``on``."""

    rank: int
    event: object = field(repr=False)
    on: frozenset[int] = frozenset()

    def __str__(self) -> str:
        where = f" at {Site(self.event.file, self.event.line or 0).in_sentence}" if self.event.file else ""
        ranks = ", ".join(map(str, sorted(self.on)))
        return f"rank {self.rank}'s {self.event.label}{where} waits for rank{'s' if len(self.on) > 1 else ''} {ranks}"


def waits(run, backend: str = "gloo") -> list[Wait]:
    """Every call of ``run`` whose return is ordered directly after other ranks' arrival on ``backend``, in the
    order the calls ended (an async call's wait is its ``Work.wait()``)."""
    order = ordering.order(run, backend)
    found: dict[tuple[int, int], set[int]] = {}
    for rank in order.events:
        for source, target in order.edges_into(rank):
            found.setdefault(target, set()).add(source[0])
    result = [Wait(point[0], order.event_at(point), frozenset(on)) for point, on in found.items()]
    return sorted(result, key=lambda w: (w.event.end if w.event.end is not None else w.event.start, w.rank))


@dataclass(frozen=True)
class NcclView:
    """Which orderings of one run hold on gloo (as recorded) and which of them NCCL's host would keep."""

    gloo: tuple[Wait, ...]
    lost: tuple[Wait, ...]  # the part of each gloo wait that NCCL would not keep
    files_lost: tuple  # (Access, Access) pairs gloo orders and NCCL would not

    def by_call(self) -> dict[str, tuple[int, int]]:
        """Per op (``store.<name>`` for store calls): (calls that wait for another rank on gloo, of which still
        wait for all of them on NCCL)."""
        lost = {(w.rank, id(w.event)) for w in self.lost}
        counts: dict[str, list[int]] = {}
        for w in self.gloo:
            name = f"store.{w.event.name}" if w.event.kind == "store" else w.event.name
            count = counts.setdefault(name, [0, 0])
            count[0] += 1
            count[1] += (w.rank, id(w.event)) not in lost
        return {name: (n, kept) for name, (n, kept) in counts.items()}

    def headline(self) -> str:
        """One line: how many calls wait for other ranks on gloo, how many still would on NCCL, files lost."""
        counts = self.by_call()
        calls = ", ".join(f"{name} {n}" for name, (n, _) in counts.items())
        kept = sum(k for _, k in counts.values())
        files = len(self.files_lost) or "none"
        waiting = f"{len(self.gloo)} call{' waits' if len(self.gloo) == 1 else 's wait'} for other ranks on gloo"
        return (
            f"{waiting}, added up over the ranks{f' ({calls})' if calls else ''}, {kept} still would on NCCL; "
            f"file handoffs ordered on gloo, not on NCCL: {files}"
        )

    def __str__(self) -> str:
        lines = [
            "calls your code made that wait for other ranks, added up over the ranks (DDP's own all_reduces are not counted)",
            f"  {'call':<30} {'on gloo (this run)':>18}   {'still on NCCL (model)':>21}",
        ]
        for name, (n, kept) in self.by_call().items():
            lines.append(f"  {name:<30} {n:>18}   {kept:>21}")
        if not self.gloo:
            lines.append("  (none)")
        if self.files_lost:
            lines.append(f"file handoffs ordered on gloo, not on NCCL: {len(self.files_lost)}")
            lines += [
                f"  rank {a.rank} {a.how} / rank {b.rank} {b.how} `{os.path.basename(a.path)}`"
                for a, b in self.files_lost
            ]
        else:
            lines.append("file handoffs ordered on gloo, not on NCCL: none")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)


def nccl_view(run) -> NcclView:
    """The orderings of ``run`` that hold on gloo, and which of them the model says NCCL's host would lose."""
    gloo = waits(run, "gloo")
    nccl = {(w.rank, id(w.event)): w.on for w in waits(run, "nccl")}
    lost = []
    for w in gloo:
        missing = w.on - nccl.get((w.rank, id(w.event)), frozenset())
        if missing:
            lost.append(Wait(w.rank, w.event, frozenset(missing)))
    return NcclView(tuple(gloo), tuple(lost), tuple(ordering.lost_on_nccl(run)))
