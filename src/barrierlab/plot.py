"""Pictures and numbers of a run: who computed, who waited, and for whom.

``summary(run)`` gives plain numbers a notebook can assert on, ``timeline(run)`` draws one lane per rank,
``waits_table(run)`` prints the numbers as text.  Only ``matplotlib.figure`` is used (never pyplot), so
importing this module opens no window and registers no figure with pyplot.
"""

from __future__ import annotations

import io
import re
import statistics
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from matplotlib.figure import Figure

from barrierlab import ops, palette
from barrierlab._protocol import Status
from barrierlab.calls import collective_calls
from barrierlab.events import HANDOFF_KINDS, WAITING_KINDS, Event

#: Event kinds whose time counts as waiting for other ranks.
#: A straggler's wait must be below the others' median by more than this many seconds...
STRAGGLER_MIN_GAP = 0.020
#: ...and the others' median must be more than this many times the straggler's wait.
STRAGGLER_RATIO = 2.0
#: Above this many barrier releases their lines are drawn without labels.
MAX_RELEASE_LABELS = 20
#: At most this many text labels inside bars, so a 16 x 1,000 event timeline stays fast and legible.
MAX_BAR_LABELS = 120
#: Hatching costs ~0.3 ms per bar to render: past this many bars of a kind, only wide ones are hatched...
MAX_HATCHED_BARS = 1000
#: ...those at least this wide (narrower stripes would not show anyway).
MIN_HATCH_INCHES = 0.1
#: A span is drawn at least this wide, so an instant read or write (a few microseconds) stays visible.
MIN_SPAN_INCHES = 0.04

ORANGE, SKY, GREEN, YELLOW, BLUE, VERMILLION, PURPLE, BLACK = (
    palette.ORANGE,
    palette.SKY,
    palette.GREEN,
    palette.YELLOW,
    palette.BLUE,
    palette.VERMILLION,
    palette.PURPLE,
    palette.BLACK,
)
RUNNING = palette.RUNNING

#: kind -> (legend label, face colour, hatch); spans are drawn full lane height, waits narrower on top.
SPAN_STYLES = {
    "compute": ("compute (span)", palette.KIND["compute"], None),
    "io": ("input/output (span)", palette.KIND["io"], None),
    "other": ("span", palette.KIND["other"], None),
}
WAIT_STYLES = {
    "collective": ("waiting in a collective", palette.KIND["collective"], "///"),
    "wait": ("waiting", palette.KIND["wait"], "\\\\\\"),
    "p2p": ("waiting in send/recv", palette.KIND["p2p"], "..."),
}
#: At most this many names in one legend entry ("forward, backward, optimizer (compute span)").
MAX_LEGEND_NAMES = 4
FAILED_STATUSES = tuple(s for s in Status if s not in (Status.FINISHED, Status.LOST))


@dataclass
class _Lane:
    """One rank as the plots see it: its events and when its function ran (None: unknown / never)."""

    rank: int
    events: list[Event]
    start: float | None
    end: float | None
    status: str | None = None
    #: the learner's call number (Event.seq) -> its position in the group's sequence (run.ledger()'s #),
    #: or None when the calls are numbered by Event.seq (no flight record of every rank)
    positions: dict[int, int] | None = None
    #: collectives torch issued itself on this rank (diagnose.Call, kind "torch"), with a start time
    torch_calls: list = field(default_factory=list)


class Release(NamedTuple):
    """The moment a collective every rank reached let them go: when the last rank arrived."""

    seq: int
    op: str
    time: float
    last_rank: int


def _drawn(events) -> list[Event]:
    """The events a lane draws: calls and spans. Store operations and file accesses are what the ordering
    model reads (``barrierlab.ordering``); a lane shows the time they took inside the spans around them."""
    return [e for e in events if e.kind not in HANDOFF_KINDS]


def _lanes(
    run, ends: Sequence[float | None] | None = None, starts: Sequence[float | None] | None = None
) -> tuple[list[_Lane], float]:
    """Normalise a Run, or a list of per-rank Event lists, into lanes and the run's total length."""
    if hasattr(run, "ranks"):
        positions, torch_calls = _numbering(run)
        lanes = [
            _Lane(
                r.rank,
                _drawn(r.events),
                _first(r.started, _drawn(r.events)),
                r.ended,
                r.status,
                positions.get(r.rank),
                torch_calls.get(r.rank, []),
            )
            for r in run.ranks
        ]
        total = float(run.elapsed)
    else:
        lanes = []
        for i, events in enumerate(run):
            events = sorted(_drawn(events), key=lambda e: e.start)
            end = ends[i] if ends is not None else _last_end(events)
            start = starts[i] if starts is not None else _first(None, events)
            if start is None and end is not None:
                start = 0.0
            lanes.append(_Lane(i, events, start, end))
        total = 0.0
    times = [t for lane in lanes for e in lane.events for t in (e.start, e.end) if t is not None]
    times += [c.start for lane in lanes for c in lane.torch_calls]
    times += [lane.end for lane in lanes if lane.end is not None]
    return lanes, max([total, *times])


def _numbering(run) -> tuple[dict[int, dict[int, int]], dict[int, list]]:
    """From ``diagnose.collective_calls``: each rank's map from its call number to the call's position in the
    group's sequence (only when torch's flight recorder of every rank was read), and the calls torch issued."""
    calls = collective_calls(run)
    if not any(c.entry is not None for cs in calls.values() for c in cs):
        return {}, {}
    positions = {
        rank: {c.event.seq: c.position for c in cs if c.event is not None and c.event.seq} for rank, cs in calls.items()
    }
    issued = {
        rank: sorted((c for c in cs if c.kind == "torch" and c.start is not None), key=lambda c: c.start)
        for rank, cs in calls.items()
    }
    return positions, issued


def _number(event: Event, lane: _Lane) -> int | None:
    """A collective's number on the timeline: its position in the group's sequence when known (as in
    ``run.ledger()``), else the rank's own call number."""
    if lane.positions is None:
        return event.seq
    return lane.positions.get(event.seq) if event.seq else None


def _label(event: Event, lane: _Lane) -> str:
    """'barrier #8': a collective named with the number ``run.ledger()`` shows for it."""
    if event.kind != "collective":
        return event.label
    number = _number(event, lane)
    return f"{event.name} #{number}" if number else event.name


def short_issuer(issuer: str) -> str:
    """Who issued a collective, in a word: "DDP backward's gradient all_reduce" -> "DDP", "Join's ..." -> "Join"."""
    head = issuer.split(" (")[0].split()
    if len(head) > 1 and head[0] == "a":  # "a functional all_reduce (DTensor / torch.compile)"
        head = head[1:]
    return head[0].removesuffix("'s") if head else "torch"


def _first(started: float | None, events: list[Event]) -> float | None:
    if started is not None:
        return started
    return min((e.start for e in events), default=None)


def _last_end(events: list[Event]) -> float | None:
    if not events or any(e.end is None for e in events):
        return None
    return max(e.end for e in events)


def _window(lane: _Lane, total: float) -> tuple[float, float] | None:
    """The rank's active time: function start to end, or to the end of the run if it never ended."""
    if lane.start is None:
        return None
    return lane.start, max(lane.start, lane.end if lane.end is not None else total)


def _event_end(event: Event, lane: _Lane, total: float) -> float:
    """Where an event stops on the time axis; one never left lasts until its rank (or the run) ended."""
    if event.end is not None:
        return event.end
    return lane.end if lane.end is not None else total


def _union_length(intervals: list[tuple[float, float]]) -> float:
    length, reach = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > reach:
            length += b - max(a, reach)
            reach = b
    return length


def _rank_numbers(lane: _Lane, total: float) -> dict:
    window = _window(lane, total)
    active = 0.0 if window is None else window[1] - window[0]
    waits = []
    if window is not None:
        for e in lane.events:
            if e.kind in WAITING_KINDS:
                a, b = max(e.start, window[0]), min(_event_end(e, lane, total), window[1])
                if b > a:
                    waits.append((a, b))
    wait = _union_length(waits)
    return {
        "busy": active - wait,
        "wait": wait,
        "idle_fraction": wait / active if active > 0 else 0.0,
        "start": lane.start,
        "end": lane.end,
        "collectives": sum(e.kind == "collective" for e in lane.events),
    }


def _slowest(ranks: dict[int, dict]) -> int | None:
    takers = [r for r, n in ranks.items() if n["collectives"]]
    return min(takers, key=lambda r: (ranks[r]["wait"], r), default=None)


def _last_to_arrive(ranks: dict[int, dict], slowest: int | None) -> int | None:
    """``slowest`` if the others clearly waited for it (by > 20 ms and > 2x its own wait), else None."""
    if slowest is None:
        return None
    others = [n["wait"] for r, n in ranks.items() if n["collectives"] and r != slowest]
    if not others:
        return None
    mine, median = ranks[slowest]["wait"], statistics.median(others)
    return slowest if median - mine > STRAGGLER_MIN_GAP and median > STRAGGLER_RATIO * mine else None


def work_name(name: str) -> str:
    """A span's name without its step number: 'forward 2' -> 'forward', 'wait(barrier#3)' -> 'Work.wait()'."""
    if name.startswith("wait(") and name.endswith(")"):
        return "Work.wait()"
    return re.sub(r"[\s,#:]*\d+$", "", name) or name


def _own_work(lanes: list[_Lane], rank: int) -> list[str]:
    """Span names (step numbers dropped) that only ``rank`` ran: work assigned to it, e.g. rank 0's download."""

    def names(lane: _Lane) -> set[str]:
        return {work_name(e.name) for e in lane.events if e.kind in SPAN_STYLES or e.kind == "other"}

    mine = names(next(lane for lane in lanes if lane.rank == rank))
    others = set().union(*(names(lane) for lane in lanes if lane.rank != rank))
    return sorted(mine - others)


def _arrival_counts(found: list[Release], lanes: list[_Lane]) -> tuple[dict[int, int], int]:
    """How often each rank was last at a release the others had to wait for (arrivals > 20 ms apart)."""
    counts: dict[int, int] = {}
    telling = 0
    for release in found:
        arrivals = [
            e.start for lane in lanes for e in lane.events if e.kind == "collective" and _number(e, lane) == release.seq
        ]
        if arrivals and release.time - min(arrivals) > STRAGGLER_MIN_GAP:
            telling += 1
            counts[release.last_rank] = counts.get(release.last_rank, 0) + 1
    return counts, telling


def _summarize(lanes: list[_Lane], total: float) -> dict:
    ranks = {lane.rank: _rank_numbers(lane, total) for lane in lanes}
    slowest = _slowest(ranks)
    last = _last_to_arrive(ranks, slowest)
    counts, telling = _arrival_counts(_releases(lanes), lanes)
    own = _own_work(lanes, last) if last is not None else []
    always_last = last is not None and telling >= 2 and counts.get(last, 0) == telling
    return {
        "ranks": ranks,
        "slowest_rank": slowest,
        "last_to_arrive": last,
        "last_at": (counts.get(last, 0) if last is not None else 0, telling),
        "own_work": own,
        "straggler": last if always_last and not own else None,
        "total": total,
        "wait_total": sum(n["wait"] for n in ranks.values()),
    }


def summary(run, ends: Sequence[float | None] | None = None, *, starts: Sequence[float | None] | None = None) -> dict:
    """Per-rank busy and waiting seconds of a run, and which rank held the others up.

    ``run`` is a :class:`~barrierlab.result.Run`, or a list with one list of Events per rank; then
    ``ends`` (and ``starts``) give when each rank's function ended (began): by default the last event's
    end (None if an event never ended) and the first event's start (0, the launch, if it has no events
    but an end).  Returns::

        {"ranks": {r: {"busy": s, "wait": s, "idle_fraction": f, "start": s, "end": s | None,
                       "collectives": n}},
         "slowest_rank": r | None, "last_to_arrive": r | None, "last_at": (k, n), "own_work": [names],
         "straggler": r | None, "total": s, "wait_total": s}

    - ``wait``: seconds inside collectives, send/recv, ``Work.wait()`` and ``wait`` spans, as the union of
      their intervals (nested events count once), clipped to the rank's active time.  An event the rank
      never left counts until the rank ended, or until the run ended if the rank never did.
    - ``busy``: active time (function start to end, or to the end of the run) minus ``wait``;
      ``idle_fraction`` = wait / active time (0 for a rank that never started).
    - ``slowest_rank``: among ranks that entered at least one collective, the one that waited least
      (ties: the lowest rank).  Arriving last at every barrier means never waiting at one, so this is the
      rank the others waited for; None if no rank entered a collective.
    - ``last_to_arrive``: ``slowest_rank`` only when it clearly held the others up: the median wait of the
      other ranks exceeds its wait by more than 20 ms and by more than 2x.  Otherwise None (ranks
      arrived about together, or there is only one rank).
    - ``last_at``: (k, n): that rank was last at k of the n releases whose arrivals spread over more
      than 20 ms.  ``own_work``: names of spans only that rank ran (work assigned to it, e.g. a download).
    - ``straggler``: ``last_to_arrive`` only when it is a straggler in the usual sense: last at every one
      of at least two such releases, while doing the same work as the others (no ``own_work``).  A rank
      that was last once, last only sometimes, or busy with work assigned to it alone is "last to
      arrive", not a straggler.
    - ``total``: the run's elapsed seconds; ``wait_total``: the sum of every rank's ``wait``.
    """
    return _summarize(*_lanes(run, ends, starts))


def releases(run, ends: Sequence[float | None] | None = None) -> list[Release]:
    """Each collective that every rank reached as the same op, released when the last rank arrived.

    Collectives are matched by their number: their position in the group's sequence when torch's flight
    recorder of every rank was read (as ``run.ledger()`` numbers them), else each rank's own call number
    (``Event.seq``).  Collectives torch issued itself are not included: gloo records no end for them.
    """
    return _releases(_lanes(run, ends)[0])


def _releases(lanes: list[_Lane]) -> list[Release]:
    per_rank = [
        {_number(e, lane): e for e in lane.events if e.kind == "collective" and _number(e, lane)} for lane in lanes
    ]
    if not per_rank:
        return []
    found = []
    for seq in sorted(set.intersection(*(set(numbered) for numbered in per_rank))):
        arrivals = [(numbered[seq].start, lane.rank) for numbered, lane in zip(per_rank, lanes)]
        names = {numbered[seq].name for numbered in per_rank}
        if len(names) == 1:
            time, last = max(arrivals)
            found.append(Release(seq, names.pop(), time, last))
    return found


def waits_table(run, ends: Sequence[float | None] | None = None) -> str:
    """The summary as a plain-text table (rank, active s, waited s, idle %), the straggler marked."""
    numbers = summary(run, ends)
    rows = [f"{'rank':>4}  {'active s':>9}  {'waited s':>9}  {'idle %':>6}"]
    for rank, n in numbers["ranks"].items():
        active = n["busy"] + n["wait"]
        mark = (
            "  <- straggler: the others waited for it"
            if rank == numbers["straggler"]
            else f"  <- {_last_note(numbers)}: the others waited for it"
            if rank == _shown_last(numbers)
            else ""
        )
        if n["start"] is None:
            mark = "  (never started)"
        elif n["end"] is None:
            mark += "  (never ended)"
        rows.append(f"{rank:>4}  {active:>9.3f}  {n['wait']:>9.3f}  {100 * n['idle_fraction']:>5.0f}%{mark}")
    rows.append(f"run: {numbers['total']:.3f} s, all ranks waited {numbers['wait_total']:.3f} s in total")
    return "\n".join(rows)


class TimelineFigure(Figure):
    """A Figure that Jupyter shows as a PNG even when pyplot (and its inline formatter) was never loaded."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


def timeline(
    run,
    *,
    title: str | None = None,
    ax=None,
    show_releases: bool = True,
    annotate: bool = True,
    ends: Sequence[float | None] | None = None,
    since: float | str | None = None,
    waits_inside: Mapping[str, str] | Iterable[str] = (),
) -> Figure:
    """Draw one lane per rank (rank 0 on top) over seconds since the ranks started: spans, waits, releases, stuck ranks.

    ``run`` is a Run or a list of per-rank Event lists (with optional ``ends``, as for :func:`summary`).
    Grey is the rank's function running; coloured bars are ``barrierlab.span`` phases; hatched bars
    are time inside a collective (waiting for the other ranks).  A call a rank never left runs to the
    end of the run with a red X.  Thin vertical lines mark each collective's release (the moment the last
    rank arrived); the right edge says how long each rank waited.  Collectives torch issued itself (DDP's
    gradient all_reduce and broadcasts, Join, DCP, FSDP, DTensor: seen through torch's flight recorder) are
    short black ticks at the top of the lane where they started, labelled with who issued them; gloo does
    not record when they ended, so they have no bar and no release line.  ``async_op=True`` calls of
    your own are a sliver (the call returned at once) with a thin bar under it until their work completed.

    Display: with ``ax=None`` the figure is a :class:`TimelineFigure` made without pyplot, so it is not
    registered with pyplot and Jupyter's inline backend does not show it on its own at the end of the
    cell; it appears once, as the cell's value (by IPython's Figure formatter if pyplot is loaded, else
    by ``_repr_png_``).  ``fig = timeline(run)`` therefore shows nothing until ``fig`` is displayed, and
    ``plt.show()`` does not know it: use ``fig.savefig(...)``, or pass ``ax`` from ``plt.subplots()``
    to draw into a figure you own (that figure is returned, and nothing is closed or resized; being a
    pyplot figure, Jupyter shows it at the end of the cell, so end the line with ``;`` to avoid a
    second copy).  pyplot figures were rejected as the default for that reason: returned as the
    cell's value they are shown twice.

    ``since``: start the time axis later, to zoom past set-up: a number of seconds, or ``"function"``
    for the moment the first rank's function started (waits and idle fractions still cover the whole run).

    ``waits_inside``: names of spans (step numbers dropped: ``"backward"`` for ``"backward 2"``) that hold
    a wait the recorder cannot see, such as the gradient all_reduce DDP waits for in C++ at the end of
    backward; a mapping gives each a reason for the legend.  Those ranks' right-edge notes then say the
    wait inside was not recorded instead of printing a near-zero "waited" figure.

    Labels say only what the record shows: "straggler" for a rank the others waited for at every one
    of at least two releases while it did the same work as they did; "last to arrive" for a rank they
    clearly waited for otherwise (once, most of the time, or while it did work only it had, such as
    rank 0 downloading); nothing when the last rank changes from step to step.  Releases are labelled
    ``op #k`` with the number ``run.ledger()`` gives the call: its position in the group's sequence of
    collectives (torch's flight recorder, counting those torch issued itself) when every rank's record was
    read, else each rank's own call number.
    """
    own_figure = ax is None
    fig, ax = _figure_and_axes(ax, len(getattr(run, "ranks", run)))
    used = _draw(
        run,
        fig,
        ax,
        title=title,
        show_releases=show_releases,
        annotate=annotate,
        ends=ends,
        since=since,
        waits_inside=_reasons(waits_inside),
    )
    _legend(fig, ax, used, own_figure)
    return fig


def _draw(run, fig, ax, *, title, show_releases, annotate, ends, since, waits_inside) -> dict[str, tuple]:
    """Draw one run into ``ax``; return the legend entries it used."""
    lanes, total = _lanes(run, ends)
    origin = _ranks_start(run) if since is None else 0.0
    if origin:
        lanes, total = _shift(lanes, origin), total - origin
    numbers = _summarize(lanes, total)
    used: dict[str, tuple] = {}
    start = _since(run, since)
    scale = _Scale(ax, fig, total, left=start or 0.0)
    _draw_running(ax, lanes, total, used)
    _draw_spans(ax, lanes, total, used, scale)
    _draw_waits(ax, lanes, total, used, scale)
    _draw_never_left(ax, lanes, total, used, scale)
    _draw_in_flight(ax, lanes, used)
    _draw_span_errors(ax, lanes, scale)
    _explain_hidden_waits(used, waits_inside, lanes)
    _draw_torch_calls(ax, lanes, used, scale, left=start if start else float("-inf"))
    labelled = show_releases and _draw_releases(
        ax, _releases(lanes), lanes, used, scale, left=start if start else float("-inf")
    )
    _set_axes(ax, lanes, total, releases_labelled=labelled)
    if start:
        ax.set_xlim(left=start)
    if origin:
        ax.set_xlabel("seconds since the ranks started")
    _label_lanes(ax, lanes, numbers)
    if annotate:
        _annotate_lanes(ax, lanes, numbers, waits_inside)
    ax.set_title(title if title is not None else _default_title(lanes, numbers), fontsize=11)
    return used


def _ranks_start(run) -> float:
    """When the first rank's function started (seconds since launch): a timeline starts there, as the deadline
    does, so a first run's wait for the warm process is not drawn as empty axis. 0 for event lists."""
    started = [r.started for r in getattr(run, "ranks", []) if r.started is not None]
    return max(min(started), 0.0) if started else 0.0


def _shift(lanes: list[_Lane], origin: float) -> list[_Lane]:
    """The lanes with every time moved ``origin`` seconds earlier."""

    def at(t: float | None) -> float | None:
        return None if t is None else t - origin

    def event(e: Event | None) -> Event | None:
        return None if e is None else replace(e, start=at(e.start), end=at(e.end))

    def call(c):
        entry = None if c.entry is None else replace(c.entry, start=at(c.entry.start))
        return replace(c, event=event(c.event), entry=entry)

    return [
        replace(
            lane,
            events=[event(e) for e in lane.events],
            start=at(lane.start),
            end=at(lane.end),
            torch_calls=[call(c) for c in lane.torch_calls],
        )
        for lane in lanes
    ]


def _reasons(waits_inside: Mapping[str, str] | Iterable[str]) -> dict[str, str]:
    if isinstance(waits_inside, str):
        raise TypeError("waits_inside must be a list of span names or a mapping name -> reason, not a str")
    if isinstance(waits_inside, Mapping):
        return {str(k): str(v) for k, v in waits_inside.items()}
    return {str(name): "" for name in waits_inside}


def _explain_hidden_waits(used: dict, waits_inside: dict[str, str], lanes: list[_Lane]) -> None:
    """Add the legend line that says which spans hold an unrecorded wait (only if such spans were drawn)."""
    drawn = [name for name in waits_inside if any(work_name(e.name) == name for lane in lanes for e in lane.events)]
    if not drawn:
        return
    reasons = "; ".join(f"{name}: {waits_inside[name]}" if waits_inside[name] else name for name in drawn)
    used["hidden-waits"] = (f"wait not recorded inside {reasons}", BLACK, "note")


def _since(run, since: float | str | None) -> float | None:
    if since == "function":
        started = [r.started for r in getattr(run, "ranks", []) if r.started is not None]
        return min(started) if started else None
    if since is None or isinstance(since, (int, float)):
        return since
    raise ValueError(f"since must be a number of seconds or 'function', not {since!r}")


def _figure_and_axes(ax, n_ranks: int):
    if ax is not None:
        return ax.get_figure(), ax
    fig = TimelineFigure(figsize=(11, 2.3 + 0.42 * max(n_ranks, 1)), layout="constrained")
    return fig, fig.add_subplot()


def _set_axes(ax, lanes: list[_Lane], total: float, releases_labelled: bool) -> None:
    top = -0.5 - (0.45 if releases_labelled else 0.0)
    ax.set_ylim(len(lanes) - 0.5, top)
    ax.set_xlim(0, total * 1.02 if total > 0 else 1.0)
    ax.set_xlabel("seconds since launch")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)


class _Scale:
    """Converts seconds to inches on the axes, to decide which bars have room for a label."""

    CHAR_INCHES = 7 * 0.6 / 72

    def __init__(self, ax, fig, total: float, left: float = 0.0) -> None:
        width = fig.get_figwidth() * ax.get_position().width * 0.85
        shown = total * 1.02 - left  # the visible seconds (``since`` moves the left edge)
        self.inches_per_second = width / (shown if shown > 0 else 1.0)
        self.right = total * 1.02  # the axis' right edge, in seconds
        self.labels_left = MAX_BAR_LABELS

    def inches(self, seconds: float) -> float:
        return seconds * self.inches_per_second

    def fits(self, seconds: float, text: str) -> bool:
        return seconds * self.inches_per_second >= (len(text) + 2) * self.CHAR_INCHES

    def seconds_for(self, text: str) -> float:
        return (len(text) + 2) * self.CHAR_INCHES / self.inches_per_second

    def take(self) -> bool:
        self.labels_left -= 1
        return self.labels_left >= 0


def _bars(ax, rects: list[tuple[float, float, float, float]], *, zorder: float, gid: str, **style) -> None:
    """Add many (x, width, y_centre, height) rectangles as one PolyCollection: fast for 10,000s of bars."""
    from matplotlib.collections import PolyCollection

    verts = [((x, y - h / 2), (x, y + h / 2), (x + w, y + h / 2), (x + w, y - h / 2)) for x, w, y, h in rects]
    ax.add_collection(PolyCollection(verts, zorder=zorder, gid=gid, **style), autolim=False)


def _bar_text(ax, x: float, y: float, text: str, *, ha: str = "center", **style) -> None:
    ax.text(x, y, text, ha=ha, va="center", fontsize=7, clip_on=True, zorder=6, **style)


def _named(description: str, names: Iterable[str], *, before: bool = True) -> str:
    """'download, read (input/output span)': the legend says what the bars are called in the code."""
    distinct = list(dict.fromkeys(names))
    if not distinct:
        return description
    shown = ", ".join(distinct[:MAX_LEGEND_NAMES]) + (", …" if len(distinct) > MAX_LEGEND_NAMES else "")
    return f"{shown} ({description})" if before else f"{description}: {shown}"


def _draw_running(ax, lanes: list[_Lane], total: float, used: dict) -> None:
    rects = []
    for y, lane in enumerate(lanes):
        window = _window(lane, total)
        if window is not None:
            rects.append((window[0], window[1] - window[0], y, 0.8))
    if rects:
        _bars(ax, rects, zorder=1, gid="running", facecolor=RUNNING, edgecolor="none")
        used["running"] = ("running your function", RUNNING, None)


def _draw_spans(ax, lanes: list[_Lane], total: float, used: dict, scale: _Scale) -> None:
    for kind, style in SPAN_STYLES.items():
        rects, labels, names = [], [], []
        for y, lane in enumerate(lanes):
            waits = sorted(e.start for e in lane.events if e.kind in WAITING_KINDS)
            for e in lane.events:
                if e.kind == kind or (kind == "other" and e.kind not in SPAN_STYLES and e.kind not in WAITING_KINDS):
                    end = _event_end(e, lane, total)
                    rects.append((e.start, max(end - e.start, MIN_SPAN_INCHES / scale.inches_per_second), y, 0.8))
                    names.append(work_name(e.name))
                    i = bisect_left(waits, e.start)
                    free = min(end, waits[i] if i < len(waits) else end) - e.start
                    labels.append((e.start, free, y, e.name))
        if rects:
            _bars(ax, rects, zorder=2, gid=f"span:{kind}", facecolor=style[1], edgecolor="white", linewidth=0.3)
            description = style[0].replace(" (span)", " span")
            used[kind] = (description, *style[1:], names, True)
            for x, free, y, name in labels:
                if scale.fits(free, name) and scale.take():
                    _bar_text(ax, x + scale.seconds_for("") / 2, y, name, ha="left")


def _draw_waits(ax, lanes: list[_Lane], total: float, used: dict, scale: _Scale) -> None:
    errors = [(e.end, y) for y, lane in enumerate(lanes) for e in lane.events if e.error and e.end is not None]
    for kind, style in WAIT_STYLES.items():
        rects, labels, names = [], [], []
        for y, lane in enumerate(lanes):
            for e in lane.events:
                if e.kind != kind:
                    continue
                end = _event_end(e, lane, total)
                rects.append((e.start, end - e.start, y, 0.5))
                names.append(work_name(e.name))
                if e.end is not None:
                    labels.append(((e.start + end) / 2, end - e.start, y, _wait_texts(e, _label(e, lane))))
        if rects:
            few = len(rects) <= MAX_HATCHED_BARS
            wide = [r for r in rects if few or scale.inches(r[1]) >= MIN_HATCH_INCHES]
            narrow = [r for r in rects if not few and scale.inches(r[1]) < MIN_HATCH_INCHES]
            if wide:
                _bars(
                    ax,
                    wide,
                    zorder=3,
                    gid=f"wait:{kind}",
                    facecolor=style[1],
                    edgecolor="none",
                    hatch=style[2],
                    hatchcolors=_darker(style[1]),
                    linewidth=0,
                )
            if narrow:
                _bars(ax, narrow, zorder=3, gid=f"wait:{kind}:narrow", facecolor=style[1], edgecolor="none")
            used[kind] = (style[0], *style[1:], names, False)
            for x, width, y, texts in labels:
                text = next((t for t in texts if scale.fits(width, t)), None)
                if text and scale.take():
                    _bar_text(ax, x, y, text, bbox=dict(facecolor=style[1], edgecolor="none", pad=0.5))
    if errors:
        xs, ys = zip(*errors)
        ax.scatter(xs, ys, marker="|", s=160, linewidths=2.5, color=VERMILLION, zorder=5, gid="errors")
        used["error"] = ("left with an error (a timeout, an exception)", VERMILLION, "|")


def _draw_in_flight(ax, lanes: list[_Lane], used: dict) -> None:
    """A thin bar under each ``async_op=True`` collective from its return to its completion (``Event.done``):
    the call itself did not block, so this time is not counted as waiting (a later wait() may have)."""
    rects = [
        (e.end, e.done - e.end, y + 0.3, 0.1)
        for y, lane in enumerate(lanes)
        for e in lane.events
        if getattr(e, "is_async", False)
        and e.end is not None
        and getattr(e, "done", None) is not None
        and e.done > e.end
    ]
    if rects:
        _bars(ax, rects, zorder=4, gid="in-flight", facecolor=ORANGE, edgecolor="none")
        used["in-flight"] = ("async_op=True collective in flight: from its return to its completion", ORANGE, None)


def _draw_torch_calls(ax, lanes: list[_Lane], used: dict, scale: _Scale, left: float = float("-inf")) -> None:
    """A short black tick at the top of the lane where each collective torch issued itself started (DDP's
    gradient all_reduce, Join, DCP, FSDP, DTensor), labelled "DDP all_reduce #4" with its position in the
    group's sequence.  gloo's flight recorder has no completion times, so there is no bar and no release."""
    xs, ys, names = [], [], []
    for y, lane in enumerate(lanes):
        calls = [c for c in lane.torch_calls if c.start >= left]  # only inside a since= axis
        for c in calls:
            xs.append(c.start)
            ys.append(y)
            names.append(f"{short_issuer(c.issuer)} {c.op}")
        i = 0
        while i < len(calls):  # ticks closer together than their label share one, after the last: "DDP #1–3"
            group = [calls[i]]
            text = _torch_label(group)
            while i + len(group) < len(calls) and calls[i + len(group)].start < group[-1].start + scale.seconds_for(
                text
            ):
                group.append(calls[i + len(group)])
                text = _torch_label(group)
            if scale.take():
                ax.text(
                    group[-1].start + scale.seconds_for("") / 4,
                    y - 0.27,
                    text,
                    ha="left",
                    va="center",
                    fontsize=6.5,
                    clip_on=True,
                    zorder=6,
                    gid="torch-call-label",
                    bbox=dict(facecolor="white", alpha=0.7, edgecolor="none", pad=0.3),
                )
            i += len(group)
    if xs:
        ax.vlines(
            xs, [y - 0.44 for y in ys], [y - 0.1 for y in ys], colors=BLACK, linewidths=1.6, zorder=6, gid="torch-calls"
        )
        used["torch-calls"] = (
            "collective torch issued itself, at its start (gloo records no end; #k as in run.ledger())",
            BLACK,
            "tick",
            names,
            False,
        )


def _torch_label(calls: list) -> str:
    """ "DDP all_reduce #4" for one call, "DDP #5–7" for several close together."""
    who = {short_issuer(c.issuer) for c in calls}
    name = who.pop() if len(who) == 1 else "torch"
    if len(calls) == 1:
        return f"{name} {calls[0].op} #{calls[0].position}"
    return f"{name} #{calls[0].position}–{calls[-1].position}"


def _draw_span_errors(ax, lanes: list[_Lane], scale: _Scale) -> None:
    """A span that raised says so next to its red mark, e.g. 'read raised FileNotFoundError'."""
    for y, lane in enumerate(lanes):
        for e in lane.events:
            if e.error and e.end is not None and e.kind not in WAITING_KINDS and scale.take():
                kind = e.error.partition(":")[0]
                text = f"{e.name} raised {kind}" if kind and " " not in kind else f"{e.name} raised"
                gap = scale.seconds_for(" ") / 2
                if e.end + gap + 1.3 * scale.seconds_for(text) <= scale.right:  # bold text is wider
                    _bar_text(ax, e.end + gap, y, text, ha="left", color=VERMILLION, fontweight="bold")
                else:  # no room right of the mark before the axis ends: write it left of the mark, readable
                    _bar_text(
                        ax,
                        e.end - gap,
                        y,
                        text,
                        ha="right",
                        color=VERMILLION,
                        fontweight="bold",
                        bbox=dict(facecolor="white", edgecolor="none", pad=1),
                    )


def _wait_texts(event: Event, label: str) -> tuple[str, ...]:
    """Bar labels for a wait, longest first; a failed call says why it failed."""
    if not event.error:
        if event.kind == "wait":
            return (label,) if event.name.startswith("wait(") else (f"waiting: {label}", label)
        return f"waiting in {label}", label
    reason = _short_error(event.error)
    return (f"waiting in {label}, then failed: {reason}", f"{label} failed: {reason}", f"{label} failed", label)


def _short_error(error: str, limit: int = 60) -> str:
    """'RuntimeError: [gloo/pair.cc:553] Timed out waiting ...' -> 'Timed out waiting ...'."""
    head, colon, rest = error.partition(": ")
    text = rest if colon and " " not in head else error
    if text.startswith("[") and "] " in text:
        text = text.split("] ", 1)[1]
    text = text.strip().splitlines()[0] if text.strip() else error
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _draw_never_left(ax, lanes: list[_Lane], total: float, used: dict, scale: _Scale) -> None:
    """Mark each rank still inside a call (or still running) at the end with a red X at the right edge."""
    ends, texts = [], []
    for y, lane in enumerate(lanes):
        open_events = [e for e in lane.events if e.end is None]
        if open_events:
            inner = max(open_events, key=lambda e: (e.kind in WAITING_KINDS, e.start))
            label = _label(inner, lane)
            texts.append((inner.start, total - inner.start, y, f"stuck in {label}: never left", label))
        if open_events or (lane.start is not None and lane.end is None):
            ends.append((total, y))
    for x, width, y, text, short in texts:
        label = next((t for t in (text, f"stuck in {short}", "stuck") if scale.fits(width, t)), None)
        if label:
            _bar_text(
                ax,
                x + width - scale.seconds_for("  "),
                y,
                label + " →",
                ha="right",
                color="white",
                fontweight="bold",
                bbox=dict(facecolor=VERMILLION, edgecolor="none", pad=1),
            )
    if ends:
        xs, ys = zip(*ends)
        ax.scatter(
            xs,
            ys,
            marker="X",
            s=110,
            color=VERMILLION,
            edgecolor="white",
            linewidths=0.8,
            zorder=7,
            clip_on=False,
            gid="never-left",
        )
        used["never-left"] = ("never left / never ended (stuck when the run was stopped)", VERMILLION, "X")


def _draw_releases(
    ax, found: list[Release], lanes: list[_Lane], used: dict, scale: _Scale, left: float = float("-inf")
) -> bool:
    """Draw one line per release; label them (skipping crowded ones) when there are few. True if labelled.

    Only collectives that every rank leaves when every rank has contributed (on gloo: barrier, all_reduce,
    all_gather, ...; :func:`barrierlab.ops.waits_for_every_rank`) get a line: a broadcast's root (a tree in
    gloo) can leave before the last rank arrives, and a rank that is not the root of a scatter waits only for
    the root, so "the last rank arrived" would not be their release."""
    found = [r for r in found if r.op in ops.EVERY_RANK_ON_GLOO]
    if not found:
        return False
    ax.vlines(
        [r.time for r in found],
        -0.5,
        len(lanes) - 0.5,
        colors=BLACK,
        linewidths=0.9,
        alpha=0.75 if len(found) <= MAX_RELEASE_LABELS else 0.25,
        zorder=4,
        gid="releases",
    )
    numbering = (
        "the group's k-th collective"
        if any(lane.positions is not None for lane in lanes)
        else "each rank's k-th collective"
    )
    used["release"] = (f"op #k ({numbering}) released: the last rank arrived", BLACK, "line")
    if len(found) > MAX_RELEASE_LABELS:
        return False
    free_from = left  # a label left of the visible axis (``since``) would hang outside it
    for r in found:
        text = f"{r.op} #{r.seq}"
        if r.time - scale.seconds_for(text) / 2 >= free_from:
            ax.text(r.time, -0.55, text, ha="center", va="bottom", fontsize=7, zorder=6, clip_on=False)
            free_from = r.time + scale.seconds_for(text) / 2
    return True


def _label_lanes(ax, lanes: list[_Lane], numbers: dict) -> None:
    ax.set_yticks(
        range(len(lanes)), labels=[_lane_label(lane, numbers) for lane in lanes], fontsize=9 if len(lanes) <= 8 else 8
    )
    for tick, lane in zip(ax.get_yticklabels(), lanes):
        if lane.rank in (numbers["straggler"], _shown_last(numbers)):
            tick.set_fontweight("bold")
        if lane.status in FAILED_STATUSES:
            tick.set_color(VERMILLION)


def _shown_last(numbers: dict) -> int | None:
    """The rank to call "last to arrive": the others clearly waited for it, at most releases (or the only one)."""
    last, (k, n) = numbers["last_to_arrive"], numbers["last_at"]
    if last is None or numbers["straggler"] is not None:
        return None
    return last if n == 0 or 2 * k > n else None


def _last_note(numbers: dict) -> str:
    k, n = numbers["last_at"]
    return "last to arrive" if k == n or n == 0 else f"last to arrive at {k} of {n}"


def _lane_label(lane: _Lane, numbers: dict) -> str:
    notes = ["straggler"] if lane.rank == numbers["straggler"] else []
    if lane.rank == _shown_last(numbers):
        notes.append(_last_note(numbers))
    if lane.status in FAILED_STATUSES:
        notes.append(lane.status)
    return f"rank {lane.rank}" + (f" ({', '.join(notes)})" if notes else "")


def _annotate_lanes(ax, lanes: list[_Lane], numbers: dict, waits_inside: Mapping[str, str]) -> None:
    right = ax.secondary_yaxis("right")
    recorded = any(lane.events for lane in lanes)
    notes = [_wait_note(numbers["ranks"][lane.rank], recorded, lane, waits_inside) for lane in lanes]
    right.set_yticks(range(len(lanes)), labels=notes, fontsize=8 if len(lanes) <= 8 else 7)
    right.tick_params(length=0)
    right.spines["right"].set_visible(False)


def _wait_note(n: dict, recorded: bool, lane: _Lane, waits_inside: Mapping[str, str]) -> str:
    """What the right edge says about a rank's waiting: only what was recorded, and what was not."""
    if n["start"] is None:
        return "did not start"
    if not recorded:
        return f"ran {_seconds(n['busy'])}"
    hidden = list(dict.fromkeys(work_name(e.name) for e in lane.events if work_name(e.name) in waits_inside))
    waited = any(e.kind in WAITING_KINDS for e in lane.events)
    if hidden:
        where = " and ".join(hidden)
        unseen = (
            f"its wait inside {where} was not recorded"
            if len(hidden) == 1
            else f"its waits inside {len(hidden)} spans (legend) were not recorded"
        )
        return f"{unseen}\n(+ {_seconds(n['wait'])} in recorded calls)" if waited else unseen
    if lane.torch_calls:
        unseen = "waits in torch's own collectives not recorded"
        return f"waited {_seconds(n['wait'])} in your calls;\n{unseen}" if waited else unseen
    if not waited:
        return "entered no collective"
    return f"waited {_seconds(n['wait'])} ({100 * n['idle_fraction']:.0f}%)"


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value >= 0.1 or value == 0 else f"{value:.3f} s"


def _legend(fig, ax, used: dict, own_figure: bool) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = []
    for entry in used.values():
        label = _named(entry[0], entry[3], before=entry[4]) if len(entry) == 5 else entry[0]
        colour, mark = entry[1], entry[2]
        if mark == "line":
            handles.append(Line2D([], [], color=colour, linewidth=0.9, label=label))
        elif mark == "note":
            handles.append(Line2D([], [], linestyle="none", label=label))
        elif mark == "tick":
            handles.append(
                Line2D(
                    [], [], color=colour, marker="|", linestyle="none", markersize=8, markeredgewidth=1.6, label=label
                )
            )
        elif mark in ("X", "|"):
            handles.append(
                Line2D(
                    [],
                    [],
                    color=colour,
                    marker=mark,
                    linestyle="none",
                    markersize=9,
                    markeredgewidth=2 if mark == "|" else 0.8,
                    markeredgecolor=colour if mark == "|" else "white",
                    label=label,
                )
            )
        else:
            handles.append(
                Patch(facecolor=colour, hatch=mark, edgecolor=_darker(colour) if mark else "none", label=label)
            )
    if not handles:
        return
    # as many columns as the longest label leaves room for, so a long one never runs off the figure
    ncols = _legend_columns([h.get_label() for h in handles], fig.get_figwidth())
    if own_figure:
        fig.legend(handles=handles, loc="outside lower center", ncols=ncols, frameon=False, fontsize=8)
    else:
        # below the axes, never over the bars; constrained layout makes room for it
        ax.legend(
            handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=ncols, fontsize=7, frameon=False
        )


def _legend_columns(labels: list[str], width_inches: float, most: int = 3) -> int:
    """The most columns (up to 3) whose widest labels, side by side, fit the figure's width at 8 pt."""
    room = width_inches * 72 / (8 * 0.55)  # characters across the figure
    for ncols in range(min(most, len(labels)), 1, -1):
        rows = -(-len(labels) // ncols)  # matplotlib fills the columns top to bottom
        columns = [labels[i : i + rows] for i in range(0, len(labels), rows)]
        if sum(max(map(len, column)) + 6 for column in columns) <= room:
            return ncols
    return 1


def _darker(colour: str, factor: float = 0.6) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return tuple(c * factor for c in to_rgb(colour))


def _default_title(lanes: list[_Lane], numbers: dict) -> str:
    head = f"What each of {len(lanes)} ranks did ({numbers['total']:.2f} s)"
    if not any(lane.events for lane in lanes):
        return head + "\nnothing was recorded inside the function (was it run with record=False?)"
    stuck = [lane.rank for lane in lanes if any(e.end is None for e in lane.events)]
    if stuck:
        return head + f"\n{_ranks(stuck)} never left a call: stuck until the run was stopped"
    failed = [lane.rank for lane in lanes if any(e.error and e.kind in WAITING_KINDS for e in lane.events)]
    if failed:
        return head + f"\n{_ranks(failed)} left a call with an error (the red marks)"
    if numbers["straggler"] is not None:
        return head + f"\nrank {numbers['straggler']} arrived last every time: the others waited for it"
    last = _shown_last(numbers)
    if last is not None:
        k, n = numbers["last_at"]
        when = "" if n <= 1 else (" every time" if k == n else f" {k} of {n} times")
        return head + f"\nrank {last} arrived last{when}: the others waited for it"
    return head


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


def function_seconds(run) -> float | None:
    """Seconds from the first rank starting the function to the last rank returning (launch cost excluded)."""
    starts = [r.started for r in run if r.started is not None]
    ends = [r.ended for r in run if r.ended is not None]
    return max(ends) - min(starts) if starts and len(ends) == run.world_size else None


def compare_timelines(runs: dict, *, height: float = 2.4, **options) -> Figure:
    """Timelines of several runs stacked on one time axis, each titled with its label and function time.

    One legend at the bottom; every panel spans the longest run, so equal lengths mean equal times: use it
    for every before/after pair.  ``options`` go to :func:`timeline` (``waits_inside``, ``show_releases``, ...).
    """
    if not runs:
        raise ValueError("runs must hold at least one labelled run")
    if "ax" in options or "title" in options:
        raise TypeError("compare_timelines makes its own axes and titles (the keys of runs)")
    waits_inside = _reasons(options.pop("waits_inside", ()))
    settings = {"show_releases": True, "annotate": True, "ends": None, "since": None}
    unknown = set(options) - set(settings)
    if unknown:
        raise TypeError(f"compare_timelines got unexpected options: {', '.join(sorted(unknown))}")
    settings.update(options)
    fig = TimelineFigure(figsize=(11, 0.6 + height * len(runs)), layout="constrained")
    axes = fig.subplots(len(runs), 1, squeeze=False)[:, 0]
    used: dict[str, tuple] = {}
    for ax, (label, result) in zip(axes, runs.items()):
        took = function_seconds(result) if hasattr(result, "ranks") else None
        drawn = _draw(
            result,
            fig,
            ax,
            title=f"{label}" + ("" if took is None else f": {took:.2f} s"),
            waits_inside=waits_inside,
            **settings,
        )
        for key, entry in drawn.items():  # one legend entry per kind, naming what every panel drew
            if key in used and len(entry) == 5:
                entry = (*entry[:3], [*used[key][3], *entry[3]], entry[4])
            used[key] = entry
    left = min(ax.get_xlim()[0] for ax in axes)
    longest = max(ax.get_xlim()[1] for ax in axes)
    for ax in axes:
        ax.set_xlim(left, longest)
    for ax in axes[:-1]:
        ax.set_xlabel("")
    _legend(fig, axes[-1], used, own_figure=True)
    return fig
