"""A live view of every rank while ``barrierlab.run`` waits: what each rank is doing now, a small lane of
what it did so far, and the time left to the deadline.

It reads the event files the ranks already write (``record.py``), incrementally and with a bound on how
much it reads per refresh, from a daemon thread of its own: the launcher's wait and its deadline never
wait for the view.  Where it shows:

* in a notebook opened in a Jupyter front end (a kernel started by a Jupyter server, which sets
  ``JPY_SESSION_NAME``): an HTML display updated in place a few times a second, emptied when the run
  ends so that the run's own result is what stays under the cell;
* in a terminal: one status line on stderr, rewritten in place, erased at the end;
* nowhere otherwise (nbval, nbclient, ``make notebooks``, output piped to a file), so stored notebooks
  and logs hold only the final result.

``BARRIERLAB_LIVE=0`` turns it off everywhere, ``BARRIERLAB_LIVE=1`` turns it on in any kernel or terminal;
``run(..., live=False/True)`` does the same for one call.
"""

from __future__ import annotations

import html
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from barrierlab import palette
from barrierlab.events import CALL_KINDS, HANDOFF_KINDS, WAITING_KINDS, Tail

#: Seconds between refreshes: smooth enough to watch a barrier fill up, cheap enough to go unnoticed.
REFRESH = 0.25
#: The view appears only for runs that last longer than this: a 50 ms launch never draws anything.
SHOW_AFTER = 0.4
#: Bytes read from one rank's event file per refresh; a rank that floods its record is skipped ahead.
READ_BUDGET = 256 * 1024
#: Metadata of the view's display in a notebook: the lab's save hook (``barrierlab_kernel.strip_live_views``)
#: removes outputs that carry it, so a saved notebook holds only what its runs left.
LIVE_VIEW_METADATA = {"barrierlab": "live view"}
#: Intervals kept per rank for its lane (oldest dropped first).
LANE_KEEP = 400
#: Calls and spans kept open per rank (the outermost dropped first: what a rank is doing is its innermost). A rank
#: that opens spans it never closes kept every one, and each refresh drew them all (attack10 a01/a02: +317 MB in
#: a terminal, 91 MB of display updates sent to a notebook in 30 s).
OPEN_KEEP = 200


@dataclass
class _Open:
    kind: str
    name: str
    number: int | None  # its place in its group's sequence (older records: in the rank's calls)
    start: float
    site: tuple[str, int, str] | None
    subgroup: bool = False


@dataclass
class RankLive:
    """What the view knows of one rank: its open calls, the intervals it has finished, and how it ended."""

    rank: int
    #: its start-up phase as the record says: None (starting), "joining" (waiting for the others to join the
    #: group) or "called" (its function runs)
    phase: str | None = None
    #: False when the run records nothing (``record=False``): no line of the rank's is written until it ends
    recorded: bool = True
    open: dict[int, _Open] = field(default_factory=dict)
    done: list[tuple[str, float, float]] = field(default_factory=list)  # (kind, start, end), since launch
    ended: str | None = None  # "finished", "raised RuntimeError", "exited with code 3", ...
    skipped_bytes: int = 0


class EventTail:
    """Applies the lines appended to one rank's events file since the last call (read by
    :class:`barrierlab.events.Tail`, never more than a budget) to what the view knows of the rank."""

    def __init__(self, path: str, launch_t0: float) -> None:
        self.tail = Tail(path)
        self.launch_t0 = launch_t0

    def poll(self, state: RankLive, budget: int = READ_BUDGET) -> None:
        items, jumped = self.tail.read(budget)
        if jumped:
            state.open.clear()
        state.skipped_bytes = self.tail.skipped
        for item in items:
            self._apply(item, state)

    def _apply(self, event: dict, state: RankLive) -> None:
        if "meta" in event:  # the start line says nothing the view shows; the phase lines do
            if event["meta"] in ("joining", "called"):
                state.phase = event["meta"]
            return
        if "kind" in event:
            if event["kind"] in HANDOFF_KINDS:
                return  # a store operation or a file access: the view shows the span or call around it
            site = (event["file"], event.get("line") or 0, event.get("func") or "") if event.get("file") else None
            # a collective's number in its own group's sequence, as the ledger and the timeline number it, not
            # the rank's count over every group (attack20 a14: one barrier was "#6" on two ranks, "#8" on another)
            number = event.get("pos") if event.get("pos") is not None else event.get("seq")
            state.open[event["id"]] = _Open(
                event["kind"], event["name"], number, event["t"] - self.launch_t0, site, bool(event.get("group"))
            )
            while len(state.open) > OPEN_KEEP:  # ids grow: the first inserted is the outermost
                del state.open[next(iter(state.open))]
        elif event.get("end") is not None:
            opened = state.open.pop(event["id"], None)
            if opened is not None:
                state.done.append((opened.kind, opened.start, event["end"] - self.launch_t0))
                del state.done[:-LANE_KEEP]


def describe(state: RankLive, now: float, where: Callable[[tuple], str] | None = None) -> str:
    """One line: what the rank is doing at ``now`` (seconds since launch)."""
    if state.ended:
        return state.ended
    if not state.recorded:  # review54 C5: "starting" for the whole of a record=False run
        return "not recorded (record=False): how it ends is shown when it ends"
    if not state.open:
        if state.phase == "called" or state.done:
            return "running your code"
        return "waiting for the other ranks to join the group" if state.phase == "joining" else "starting"
    current = state.open[max(state.open)]
    label = f"{current.name} #{current.number}" if current.number else current.name
    if current.number and current.subgroup:
        label += " of its subgroup"
    if current.kind in CALL_KINDS:
        text = f"waiting in {label} since {now - current.start:.1f} s"
    elif current.kind == "wait":
        text = f"waiting in span '{current.name}' since {now - current.start:.1f} s"
    else:
        text = f"working in span '{current.name}' since {now - current.start:.1f} s"
    if current.site and where is not None:
        text += f" — {where(current.site)}"
    return text


def lane_svg(state: RankLive, now: float, horizon: float, width: int = 220, height: int = 12) -> str:
    """A small SVG lane: the calls and spans the rank has been in, coloured as on the timeline, up to ``now``."""
    scale = width / max(horizon, 1e-9)
    rects = [f'<rect x="0" y="0" width="{min(now, horizon) * scale:.1f}" height="{height}" fill="#eee"/>']
    intervals = list(state.done) + [(o.kind, o.start, now) for o in state.open.values()]
    for kind, start, end in intervals:
        x, w = max(start, 0.0) * scale, max((min(end, horizon) - max(start, 0.0)) * scale, 1.0)
        rects.append(
            f'<rect x="{x:.1f}" y="1" width="{w:.1f}" height="{height - 2}" fill="{palette.KIND.get(kind, palette.RUNNING)}"/>'
        )
    return f'<svg width="{width}" height="{height}" style="vertical-align:middle">' + "".join(rects) + "</svg>"


def render_html(states: list[RankLive], now: float, deadline: float, where=None) -> str:
    rows = []
    for s in states:
        colour = palette.FINISHED_TEXT if s.ended == "finished" else (palette.FAILED_TEXT if s.ended else "#333")
        rows.append(
            f"<tr><td style='white-space:nowrap'>rank {s.rank}</td><td>{lane_svg(s, now, deadline)}</td>"
            f"<td style='text-align:left;color:{colour}'>{html.escape(describe(s, now, where))}</td></tr>"
        )
    left = max(deadline - now, 0.0)
    return (
        "<div style='font-family:monospace;font-size:12px'>"
        f"<b>barrierlab</b>: {len(states)} ranks, {now:.1f} s elapsed, deadline in {left:.1f} s"
        "<table style='border-collapse:collapse'>" + "".join(rows) + "</table></div>"
    )


def _innermost_kind(state: RankLive) -> str | None:
    """The kind of the call or span the rank entered last and has not left (None: in none)."""
    return state.open[max(state.open)].kind if state.open else None


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def render_line(states: list[RankLive], now: float, deadline: float) -> str:
    ended = sum(1 for s in states if s.ended)
    waiting = [s.rank for s in states if not s.ended and _innermost_kind(s) in WAITING_KINDS]
    working = [s.rank for s in states if not s.ended and s.rank not in waiting and _innermost_kind(s) is not None]
    text = f"barrierlab: {now:.1f} s, deadline in {max(deadline - now, 0):.1f} s · {ended}/{len(states)} ended"
    if working:
        text += " · working: " + _ranks(working)
    if waiting:
        text += " · waiting: " + _ranks(waiting)
    return text


#: The most of an outcome file's JSON header the view reads (the header holds no pickles).
HEADER_LIMIT = 64 * 1024


def _ending(path: str, code: int | None, sig: int | None) -> str:
    """How a rank ended, in words, from its exit status and its outcome file's JSON header (never the pickles)."""
    from barrierlab._protocol import Outcome, Status, signal_name

    if sig is not None:
        return f"killed by {signal_name(sig)}"
    outcome = Outcome.read_header(path, HEADER_LIMIT)
    status = outcome.status if outcome is not None else None
    if status == Status.FINISHED:
        return "finished"
    if status in (Status.RAISED, Status.SETUP_FAILED):
        kind = str(outcome.error_type).rpartition(".")[2] or "an exception"
        return f"raised {kind}" + (" before your function started" if status == Status.SETUP_FAILED else "")
    if status == Status.EXITED:
        return f"exited with code {outcome.exit_code if outcome.exit_code is not None else code}"
    if status:
        return str(status)
    return "ended without a report" if code is None else f"exited with code {code} before reporting"


def ended_ranks(folder: str, world_size: int, exits: dict[int, tuple[int | None, int | None]]) -> dict[int, str]:
    """Each rank that has exited, or has written its outcome (a lingering rank), with how it ended."""
    from barrierlab._protocol import RankFiles

    ended = {}
    for rank in range(world_size):
        path = RankFiles(folder, rank).outcome
        if rank in exits or os.path.exists(path):
            code, sig = exits.get(rank, (None, None))
            ended[rank] = _ending(path, code, sig)
    return ended


def _setting(live: bool | None) -> bool | None:
    if live is not None:
        return live
    value = os.environ.get("BARRIERLAB_LIVE", "").strip().lower()
    if value in ("0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    return None


def _in_kernel() -> bool:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "ipykernel" in sys.modules and type(shell).__name__ == "ZMQInteractiveShell"


def choose(live: bool | None) -> str:
    """Which view to show: "notebook", "terminal" or "none" (see the module docstring)."""
    setting = _setting(live)
    if setting is False:
        return "none"
    if _in_kernel():
        return "notebook" if setting or os.environ.get("JPY_SESSION_NAME") else "none"
    stream = sys.__stderr__
    if setting or (stream is not None and stream.isatty()):
        return "terminal"
    return "none"


class LiveView:
    """Shows the ranks of one run until :meth:`close`; every method returns at once."""

    def __init__(
        self,
        kind: str,
        event_paths: list[str],
        launch_t0: float,
        deadline: float,
        endings: Callable[[], dict[int, str]],
        where: Callable[[tuple], str] | None = None,
        recorded: bool = True,
    ) -> None:
        self.kind = kind
        self.deadline = deadline
        self.launch_t0 = launch_t0
        self.endings = endings
        self.where = where
        self.states = [RankLive(rank, recorded=recorded) for rank in range(len(event_paths))]
        self.tails = [EventTail(p, launch_t0) for p in event_paths]
        self._stop = threading.Event()
        self._draw_lock = threading.Lock()
        self._handle = None
        self._shown = False
        self._thread: threading.Thread | None = None
        if kind != "none":
            self._thread = threading.Thread(target=self._loop, name="barrierlab-live", daemon=True)
            self._thread.start()

    def refresh(self) -> None:
        now = time.monotonic() - self.launch_t0
        endings = self.endings()
        for tail, state in zip(self.tails, self.states):
            tail.poll(state)
            state.ended = endings.get(state.rank, state.ended)
        self._draw(now)

    def _loop(self) -> None:
        if self._stop.wait(SHOW_AFTER):
            return
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception:  # a view must never break the run it shows
                return
            self._stop.wait(REFRESH)

    def _draw(self, now: float) -> None:
        with self._draw_lock:
            if not self._stop.is_set():
                self._show(now)

    def _show(self, now: float) -> None:
        if self.kind == "notebook":
            from IPython.display import HTML, display

            content = HTML(render_html(self.states, now, self.deadline, self.where))
            if self._handle is None:
                self._handle = display(content, display_id=True, metadata=LIVE_VIEW_METADATA)
            else:
                self._handle.update(content, metadata=LIVE_VIEW_METADATA)
        elif self.kind == "terminal":
            line = render_line(self.states, now, self.deadline)
            sys.__stderr__.write("\r\x1b[2K" + line[:160])
            sys.__stderr__.flush()
        self._shown = True

    def close(self) -> None:
        """Stop refreshing and take the view away, so only the run's result stays."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=REFRESH * 2)
        with self._draw_lock:
            if self._shown:
                self._erase()

    def _erase(self) -> None:
        try:
            if self.kind == "notebook" and self._handle is not None:
                from IPython.display import HTML

                self._handle.update(HTML(""), metadata=LIVE_VIEW_METADATA)
            elif self.kind == "terminal":
                sys.__stderr__.write("\r\x1b[2K")
                sys.__stderr__.flush()
        except Exception:
            pass
