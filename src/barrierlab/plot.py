"""Pictures of a run: who computed, who waited, and for whom.

``timeline(run)`` draws one lane per rank, ``compare_timelines(runs)`` several runs on one time axis.  The
numbers they show (waits, releases, the straggler) come from ``barrierlab.waits``; this module only draws.
Only ``matplotlib.figure`` is used (never pyplot), so importing this module opens no window and registers no
figure with pyplot.
"""

from __future__ import annotations

import io
import math
import os
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import matplotlib
from matplotlib.figure import Figure

from barrierlab import ops, palette, waits
from barrierlab._protocol import Status
from barrierlab.events import WAITING_KINDS, Event, ranks_start
from barrierlab.waits import Lane as _Lane
from barrierlab.waits import RankWaits, Release, Waits, function_seconds, work_name
from barrierlab.words import issuer_word

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
#: With ``handoffs=True``: at most this many ordered file handoffs get their ordering edges drawn (races always are).
MAX_HANDOFFS = 12
MAX_RACES_DRAWN = 50  # a dashed line and a label each

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


def _label(event: Event, lane: _Lane) -> str:
    """'barrier #8': a collective named with the number ``run.ledger()`` shows for it."""
    if event.kind != "collective":
        return event.label
    number = waits.number(event, lane)
    return f"{event.name} #{number}" if number else event.name


class TimelineFigure(Figure):
    """A Figure that Jupyter shows as a PNG even when pyplot (and its inline formatter) was never loaded."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


#: Every text of a timeline is drawn as written: span names, titles and paths come from the learner's code
#: (``bl.span(r"copy $HOME\data to $SCRATCH")``), and two dollar signs would make matplotlib parse them as math
#: (and raise on what is no TeX).
_AS_WRITTEN = {"text.parse_math": False}


@matplotlib.rc_context(_AS_WRITTEN)
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
    handoffs: bool = False,
    until: float | None = None,
) -> Figure:
    """Draw one lane per rank (rank 0 on top) over seconds since the ranks started: spans, waits, releases, stuck ranks.

    ``run`` is a Run or a list of per-rank Event lists (with optional ``ends``, as for
    :func:`barrierlab.waits.measure`).
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
    ``until``: end the time axis earlier, in the same seconds as ``since`` (a close-up of one step; the
    right-edge notes still cover the whole run).

    ``waits_inside``: names of spans (step numbers dropped: ``"backward"`` for ``"backward 2"``) that hold
    a wait the recorder cannot see, such as the gradient all_reduce DDP waits for in C++ at the end of
    backward; a mapping gives each a reason for the legend.  Those ranks' right-edge notes then say the
    wait inside was not recorded instead of printing a near-zero "waited" figure.

    ``handoffs=True`` (a Run only) adds what the ordering model (:mod:`barrierlab.ordering`, on gloo) says of
    the run's file accesses: for each file one rank changed and another used, the edges between ranks that order
    the change before the use (arrows from where one rank's point is to where the other's wait ended), and each
    race (two accesses nothing orders) as a dashed vermilion line between them.

    Labels say only what the record shows: "straggler" for a rank the others waited for at every one
    of at least two releases while it did the same work as they did; "last to arrive" for a rank they
    clearly waited for otherwise (once, most of the time, or while it did work only it had, such as
    rank 0 downloading); nothing when the last rank changes from step to step.  Releases are labelled
    ``op #k`` with the number ``run.ledger()`` gives the call: its position in the group's sequence of
    collectives (torch's flight recorder, counting those torch issued itself) when every rank's record was
    read, else each rank's own call number.
    """
    _check_timeline_arguments(ax, since, waits_inside, until)
    lanes_asked = len(getattr(run, "ranks", run))
    _check_drawing_options(title, show_releases, annotate, ends, lanes_asked)
    if lanes_asked > MAX_LANES:
        raise ValueError(
            f"timeline draws at most {MAX_LANES} ranks, one lane each, and this run has {lanes_asked}: read "
            "run.diagnosis and run.ledger(), or draw a few ranks' events: timeline([run[r].events for r in ranks])"
        )
    own_figure = ax is None
    fig, ax = _figure_and_axes(ax, lanes_asked)
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
        handoffs=handoffs,
        until=until,
    )
    _legend(fig, ax, used, own_figure)
    return fig


def _draw(
    run, fig, ax, *, title, show_releases, annotate, ends, since, waits_inside, handoffs=False, until=None
) -> dict[str, tuple]:
    """Draw one run into ``ax``; return the legend entries it used."""
    if not isinstance(handoffs, bool):
        raise TypeError(f"handoffs must be a bool, not {type(handoffs).__name__}")
    if handoffs and not hasattr(run, "ranks"):
        raise ValueError("handoffs=True needs a Run (the ordering model reads its file accesses), not event lists")
    lanes, total = waits.lanes(run, ends)
    origin = ranks_start(run) if since is None else 0.0
    if origin:
        lanes, total = _shift(lanes, origin), total - origin
    numbers = waits.from_lanes(lanes, total)
    used: dict[str, tuple] = {}
    start = _since(run, since)
    right = None if until is None else until - origin
    scale = _Scale(ax, fig, total, left=start or 0.0, right=right)
    _draw_running(ax, lanes, total, used)
    _draw_spans(ax, lanes, total, used, scale)
    _draw_waits(ax, lanes, total, used, scale)
    _draw_never_left(ax, lanes, total, used, scale)
    _draw_in_flight(ax, lanes, used)
    _draw_span_errors(ax, lanes, scale)
    _explain_hidden_waits(used, waits_inside, lanes)
    _draw_torch_calls(ax, lanes, used, scale, left=start if start else float("-inf"))
    labelled = show_releases and _draw_releases(
        ax, list(numbers.releases), lanes, used, scale, left=start if start else float("-inf")
    )
    if handoffs:
        _draw_handoffs(ax, run, lanes, origin, used)
    _set_axes(ax, lanes, total, releases_labelled=labelled)
    if start:
        ax.set_xlim(left=start)
    if right is not None:
        ax.set_xlim(right=right)
    if origin:
        ax.set_xlabel("seconds since the ranks started")
    _label_lanes(ax, lanes, numbers)
    if annotate:
        _annotate_lanes(ax, lanes, numbers, waits_inside)
    shown = title if title is not None else _default_title(lanes, numbers)
    dropped = getattr(run, "events_dropped", None) if title is None else None
    if dropped:  # attack27 a10: the middle of long records was drawn as plain running, and counted in the waits
        shown += f"\n{waits.not_read(dropped)}: not drawn, and not in the waits"
    ax.set_title(shown, fontsize=11)
    return used


def _shift(lanes: list[_Lane], origin: float) -> list[_Lane]:
    """The lanes with every time moved ``origin`` seconds earlier."""

    def at(t: float | None) -> float | None:
        return None if t is None else t - origin

    def event(e: Event | None) -> Event | None:
        return None if e is None else replace(e, start=at(e.start), end=at(e.end), done=at(e.done))

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


#: Most ranks one timeline draws (a lane of 0.42 inch each): a run read from a folder can say it had 4,096
#: (attack13 a12: a 206,714-pixel figure, 1.3 GB and two minutes for one rank's records).
MAX_LANES = 64


def _check_timeline_arguments(ax, since, waits_inside, until=None) -> None:
    """Refuse a bad ``ax``, ``since``, ``until`` or ``waits_inside`` by name, before anything is drawn
    (attack13 a10)."""
    if ax is not None:
        from matplotlib.axes import Axes

        if not isinstance(ax, Axes):
            raise TypeError(f"ax must be a matplotlib Axes (from plt.subplots()) or None, not {type(ax).__name__}")
    if since is not None and since != "function" and not _finite_seconds(since):
        raise ValueError(f"since must be a finite number of seconds or 'function', not {_shown(since)}")
    if until is not None:
        if not _finite_seconds(until):
            raise ValueError(f"until must be a finite number of seconds, not {_shown(until)}")
        if isinstance(since, (int, float)) and not isinstance(since, bool) and until <= since:
            raise ValueError(f"until ({until!r}) must be later than since ({since!r})")
    if not isinstance(waits_inside, (Mapping, str)):
        try:
            iter(waits_inside)
        except TypeError:
            raise TypeError(
                "waits_inside must be a list of span names or a mapping name -> reason, not "
                f"{type(waits_inside).__name__}"
            ) from None


def _finite_seconds(value) -> bool:
    """A number of seconds a float can hold (attack20 a10: ``since=10**400`` raised OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_drawing_options(title, show_releases, annotate, ends, lanes: int) -> None:
    """Refuse a bad ``title``, ``show_releases``, ``annotate`` or ``ends`` by name (attack20 a10: each drew)."""
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, not {type(title).__name__}")
    for name, flag in (("show_releases", show_releases), ("annotate", annotate)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, not {_shown(flag)}")
    if ends is None:
        return
    if isinstance(ends, (str, bytes)) or not hasattr(ends, "__len__"):
        raise TypeError(f"ends must be a list of seconds (or None) per rank, not {type(ends).__name__}")
    if len(ends) != lanes:
        raise ValueError(f"ends must give one time (or None) per rank drawn: {lanes}, not {len(ends)}")
    for end in ends:
        if end is not None and not _finite_seconds(end):
            raise ValueError(f"ends must hold finite numbers of seconds or None, not {_shown(end)}")


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

    def __init__(self, ax, fig, total: float, left: float = 0.0, right: float | None = None) -> None:
        width = fig.get_figwidth() * ax.get_position().width * 0.85
        self.right = total * 1.02 if right is None else right  # the axis' right edge, in seconds
        shown = self.right - left  # the visible seconds (``since``/``until`` move the edges)
        self.inches_per_second = width / (shown if shown > 0 else 1.0)
        self.labels_left = MAX_BAR_LABELS
        self.placed: dict[float, list[tuple[float, float]]] = {}  # lane -> (from, to) seconds of its labels

    def inches(self, seconds: float) -> float:
        return seconds * self.inches_per_second

    def fits(self, seconds: float, text: str) -> bool:
        return seconds * self.inches_per_second >= (len(text) + 2) * self.CHAR_INCHES

    def seconds_for(self, text: str) -> float:
        return (len(text) + 2) * self.CHAR_INCHES / self.inches_per_second

    def take(self) -> bool:
        self.labels_left -= 1
        return self.labels_left >= 0

    def place(self, y: float, x: float, text: str, *, ha: str = "center") -> bool:
        """Claim room on lane ``y`` for ``text`` at ``x``; False if it would overlap a label already there."""
        if self.labels_left <= 0:
            return False
        width = self.seconds_for(text)
        start = x - width / 2 if ha == "center" else x
        taken = self.placed.setdefault(y, [])
        if any(start < end and other < start + width for other, end in taken):
            return False
        taken.append((start, start + width))
        return True


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
        window = waits.window(lane, total)
        if window is not None:
            rects.append((window[0], window[1] - window[0], y, 0.8))
    if rects:
        _bars(ax, rects, zorder=1, gid="running", facecolor=RUNNING, edgecolor="none")
        used["running"] = ("running your function", RUNNING, None)


def _draw_spans(ax, lanes: list[_Lane], total: float, used: dict, scale: _Scale) -> None:
    for kind, style in SPAN_STYLES.items():
        rects, labels, names = [], [], []
        for y, lane in enumerate(lanes):
            entered = sorted(e.start for e in lane.events if e.kind in WAITING_KINDS)
            for e in lane.events:
                if e.kind == kind or (kind == "other" and e.kind not in SPAN_STYLES and e.kind not in WAITING_KINDS):
                    end = waits.event_end(e, lane, total)
                    rects.append((e.start, max(end - e.start, MIN_SPAN_INCHES / scale.inches_per_second), y, 0.8))
                    names.append(work_name(e.name))
                    i = bisect_left(entered, e.start)
                    free = min(end, entered[i] if i < len(entered) else end) - e.start
                    labels.append((e.start, free, y, e.name))
        if rects:
            _bars(ax, rects, zorder=2, gid=f"span:{kind}", facecolor=style[1], edgecolor="white", linewidth=0.3)
            description = style[0].replace(" (span)", " span")
            used[kind] = (description, *style[1:], names, True)
            for x, free, y, name in labels:
                at = x + scale.seconds_for("") / 2
                if scale.fits(free, name) and scale.place(y, at, name, ha="left") and scale.take():
                    _bar_text(ax, at, y, name, ha="left")


def _draw_waits(ax, lanes: list[_Lane], total: float, used: dict, scale: _Scale) -> None:
    errors = [(e.end, y) for y, lane in enumerate(lanes) for e in lane.events if e.error and e.end is not None]
    for kind, style in WAIT_STYLES.items():
        rects, labels, names = [], [], []
        for y, lane in enumerate(lanes):
            for e in lane.events:
                if e.kind != kind:
                    continue
                end = waits.event_end(e, lane, total)
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
                text = next((t for t in texts if scale.fits(width, t) and scale.place(y, x, t)), None)
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
            names.append(f"{issuer_word(c.issuer)} {c.op}")
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
    who = {issuer_word(c.issuer) for c in calls}
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
        open_events = [e for e in lane.events if e.never_left]
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
            in_layout=False,
            gid="never-left",
        )
        used["never-left"] = ("never left / never ended (stuck when the run was stopped)", VERMILLION, "X")


def _draw_handoffs(ax, run, lanes: list[_Lane], origin: float, used: dict) -> None:
    """The ordering model's view of the run's file handoffs: for each file one rank changed and another used,
    the chain that orders them (along a lane: program order; an arrow between lanes: an edge, such as a barrier
    that released one rank after another entered it), and a dashed line for each race (see :func:`timeline`).
    Drawn in the upper part of each lane, where span labels are not."""
    from barrierlab import ordering

    order = ordering.order(run)
    row = {lane.rank: y - 0.25 for y, lane in enumerate(lanes)}
    races = order.races()
    handoffs = [h for h in order.handoffs() if h.first.rank in row and h.second.rank in row]
    drawn = handoffs[:MAX_HANDOFFS]
    colour = _darker(BLUE, 0.8)
    segments = set()
    for h in drawn:
        chain = [(h.first.event.start, h.first.rank), *((order.time(p), p[0]) for p in h.chain)]
        chain.append((h.second.event.start, h.second.rank))
        for (ta, ra), (tb, rb) in zip(chain, chain[1:]):
            segments.add((ta - origin, ra, tb - origin, rb))
    for xa, ra, xb, rb in sorted(segments):
        if ra == rb:
            ax.plot([xa, xb], [row[ra]] * 2, color=colour, linewidth=1.4, zorder=8, gid="handoff-chain")
        else:
            ax.annotate(
                "",
                xy=(xb, row[rb]),
                xytext=(xa, row[ra]),
                arrowprops=dict(arrowstyle="-|>", color=colour, linewidth=1.4, shrinkA=0, shrinkB=0),
                zorder=8,
                gid="handoff-edge",
            )
    points = {(x.rank, x.event.start) for h in drawn for x in (h.first, h.second)}
    points |= {
        (x.rank, x.event.start) for race in races[:MAX_RACES_DRAWN] for x in (race.first, race.second) if x.rank in row
    }
    if points:
        xs, ys = zip(*((t - origin, row[rank]) for rank, t in points))
        ax.scatter(xs, ys, marker="o", s=20, color=BLACK, edgecolor="white", linewidths=0.6, zorder=9, gid="accesses")
        used["accesses"] = ("a file access that another rank's access of the file conflicts with", BLACK, "o")
    if segments:
        shown = str(len(handoffs)) if len(handoffs) <= MAX_HANDOFFS else f"{MAX_HANDOFFS} of {len(handoffs)}"
        used["handoff-edges"] = (
            f"what orders a file handoff ({shown} drawn; ordering model, gloo): along a lane, program order; "
            "between lanes, a call that held one rank until another arrived",
            colour,
            "arrow",
        )
    for race in races[:MAX_RACES_DRAWN]:  # attack15 a10: 43,200 races took the figure past 20 s
        a, b = race.first, race.second
        if a.rank not in row or b.rank not in row:
            continue
        xa, xb = a.event.start - origin, b.event.start - origin
        ax.plot([xa, xb], [row[a.rank], row[b.rank]], "--", color=VERMILLION, linewidth=1.6, zorder=9, gid="race")
        ax.text(
            xb,
            row[b.rank] + 0.5,
            f"race: {os.path.basename(b.path.rstrip(os.sep))}",
            ha="center",
            va="center",
            fontsize=7,
            color=VERMILLION,
            fontweight="bold",
            zorder=10,
            gid="race-label",
            bbox=dict(facecolor="white", alpha=0.8, edgecolor="none", pad=0.5),
        )
    if races:
        count = races.count_text() if hasattr(races, "count_text") else str(len(races))
        drawn_races = f"; {MAX_RACES_DRAWN} drawn" if len(races) > MAX_RACES_DRAWN else ""
        used["race"] = (
            f"race ({count}{drawn_races}): two ranks' accesses of a file that nothing orders",
            VERMILLION,
            "dashed",
        )


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
    if any(lane.positions is not None for lane in lanes):
        numbering = "the default group's k-th collective, as in run.ledger()"
    elif any(lane.numbers is not None for lane in lanes):
        # run.ledger()'s numbers leave new_group calls and a subgroup's collectives out (calls.call_numbers)
        numbering = "each rank's k-th collective on the default group, as in run.ledger()"
    else:
        numbering = "each rank's k-th collective"
    used["release"] = (f"op #k ({numbering}) released: the last rank arrived", BLACK, "line")
    if len(found) > MAX_RELEASE_LABELS:
        return False
    free_from = left  # a label left of the visible axis (``since``) would hang outside it
    for r in found:
        text = f"{r.op} #{r.seq}"
        if r.time - scale.seconds_for(text) / 2 >= free_from:
            # inside the axes' top margin (see _set_axes), so out of the layout: a learner's set_xlim that
            # leaves a label far outside must not make constrained layout collapse the axes
            ax.text(r.time, -0.55, text, ha="center", va="bottom", fontsize=7, zorder=6, clip_on=False, in_layout=False)
            free_from = r.time + scale.seconds_for(text) / 2
    return True


def _label_lanes(ax, lanes: list[_Lane], numbers: Waits) -> None:
    ax.set_yticks(
        range(len(lanes)), labels=[_lane_label(lane, numbers) for lane in lanes], fontsize=9 if len(lanes) <= 8 else 8
    )
    for tick, lane in zip(ax.get_yticklabels(), lanes):
        if lane.rank in (numbers.straggler, numbers.shown_last):
            tick.set_fontweight("bold")
        if lane.status in FAILED_STATUSES:
            tick.set_color(VERMILLION)


def _lane_label(lane: _Lane, numbers: Waits) -> str:
    notes = ["straggler"] if lane.rank == numbers.straggler else []
    if lane.rank == numbers.shown_last:
        notes.append(numbers.last_note())
    if lane.status in FAILED_STATUSES:
        notes.append(lane.status)
    return f"rank {lane.rank}" + (f" ({', '.join(notes)})" if notes else "")


def _annotate_lanes(ax, lanes: list[_Lane], numbers: Waits, waits_inside: Mapping[str, str]) -> None:
    right = ax.secondary_yaxis("right")
    recorded = any(lane.events for lane in lanes)
    notes = [_wait_note(numbers.ranks[lane.rank], recorded, lane, waits_inside) for lane in lanes]
    right.set_yticks(range(len(lanes)), labels=notes, fontsize=8 if len(lanes) <= 8 else 7)
    right.tick_params(length=0)
    right.spines["right"].set_visible(False)


def _wait_note(n: RankWaits, recorded: bool, lane: _Lane, waits_inside: Mapping[str, str]) -> str:
    """What the right edge says about a rank's waiting: only what was recorded, and what was not."""
    if n.start is None:
        return "did not start"
    if not recorded:
        return f"ran {_seconds(n.busy)}"
    hidden = list(dict.fromkeys(work_name(e.name) for e in lane.events if work_name(e.name) in waits_inside))
    waited = any(e.kind in WAITING_KINDS for e in lane.events)
    if hidden:
        where = " and ".join(hidden)
        unseen = (
            f"its wait inside {where} was not recorded"
            if len(hidden) == 1
            else f"its waits inside {len(hidden)} spans (legend) were not recorded"
        )
        return f"{unseen}\n(+ {_seconds(n.wait)} in recorded calls)" if waited else unseen
    if any(c.event is None for c in lane.torch_calls):  # issued from C++ (DDP's): only the flight record has it
        unseen = "waits in torch's own collectives not recorded"
        return f"waited {_seconds(n.wait)} in recorded calls;\n{unseen}" if waited else unseen
    if lane.torch_calls and waited:  # torch's Python code called the collective (dist.breakpoint's barrier)
        return f"waited {_seconds(n.wait)} in recorded calls ({100 * n.idle_fraction:.0f}%)"
    if not waited:
        return "entered no collective"
    return f"waited {_seconds(n.wait)} ({100 * n.idle_fraction:.0f}%)"


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
        elif mark == "dashed":
            handles.append(Line2D([], [], color=colour, linewidth=1.6, linestyle="--", label=label))
        elif mark == "arrow":
            handles.append(Line2D([], [], color=colour, linewidth=1.1, marker=">", markersize=5, label=label))
        elif mark == "o":
            handles.append(Line2D([], [], color=colour, marker="o", linestyle="none", markersize=4.5, label=label))
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


def _default_title(lanes: list[_Lane], numbers: Waits) -> str:
    head = f"What each of {len(lanes)} ranks did ({numbers.total:.2f} s)"
    if not any(lane.events for lane in lanes):
        return head + "\nnothing was recorded inside the function (was it run with record=False?)"
    stuck = [lane.rank for lane in lanes if any(e.never_left for e in lane.events)]
    if stuck:
        return head + f"\n{_ranks(stuck)} never left a call: stuck until the run was stopped"
    erred = {lane.rank: {e.name for e in lane.events if e.error and e.kind in WAITING_KINDS} for lane in lanes}
    failed = [rank for rank, names in erred.items() if names]
    if failed:
        names = set().union(*erred.values())  # review61a: 00's `wait(timeout)` was told "left a call"
        what = f"left {names.pop()}" if len(names) == 1 else "left a call"
        return head + f"\n{_ranks(failed)} {what} with an error (the red marks)"
    if numbers.straggler is not None:
        return head + f"\nrank {numbers.straggler} arrived last every time: the others waited for it"
    last = numbers.shown_last
    if last is not None:
        k, n = numbers.last_at
        when = "" if n <= 1 else (" every time" if k == n else f" {k} of {n} times")
        return head + f"\nrank {last} arrived last{when}: the others waited for it"
    return head


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


@matplotlib.rc_context(_AS_WRITTEN)
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
    settings = {"show_releases": True, "annotate": True, "ends": None, "since": None, "handoffs": False}
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
