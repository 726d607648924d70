"""Interactive explorers: move a control, the ranks run again, the timeline and its cost are redrawn.

``explore_straggler(...)`` is the plain function behind the straggler explorer: one run of
``barrierlab.scenarios.straggler`` and a figure (timeline + measured vs modelled time), usable without a
browser.  ``straggler_explorer(...)`` wraps it in ipywidgets controls.  Every re-run is bounded by a
deadline (the launcher kills what is left), and controls update only on release (``continuous_update=False``).

Interactive speed (issue 14): a redraw is the run plus the drawing, so both are kept short.  The defaults
simulate 3 steps of 10 ms (``DEFAULT_BASE_COMPUTE``) with an 80 ms straggler (``DEFAULT_DELAY``, a run of about 0.27 s): 80 ms is more than 10x the
95th-percentile step jitter measured on one CPU (``benchmarks/explorer.py``), so the timeline still shows
the straggler and not the scheduler.  The figure has a fixed layout (no constrained-layout pass), is drawn
into the same Figure on every redraw and saved as a PNG at 80 dpi; ``benchmarks/explorer.py`` prints the
redraw times.
"""

from __future__ import annotations

import html
import io
import time

import ipywidgets as widgets
from matplotlib.figure import Figure

from barrierlab.launch import run as launch_run
from barrierlab.plot import TimelineFigure, timeline
from barrierlab.result import Run
from barrierlab.scenarios import straggler
from barrierlab.waits import function_seconds

#: The explorer's default settings: 4 ranks, rank 1 late by 80 ms in each of 3 steps of 10 ms. 80 ms is 16-18x the
#: 95th-percentile step jitter measured on 1 CPU at 4 ranks (4.5-4.9 ms) and 10-14x at 8 ranks (5.7-7.6 ms)
#: (benchmarks/explorer.py), and keeps a redraw under 0.5 s.
DEFAULT_WORLD_SIZE, DEFAULT_DELAY, DEFAULT_STEPS, DEFAULT_BASE_COMPUTE = 4, 0.08, 3, 0.01
#: World sizes the explorer offers: past 8 ranks on a laptop the timeline is a blur of scheduling noise.
WORLD_SIZES = (2, 8)
#: Largest straggler delay the explorer offers, in seconds (with 3 steps a run stays under 1 s).
MAX_DELAY = 0.3
#: Step of the delay slider, in seconds.
DELAY_STEP = 0.02
#: Barrier frequencies offered: (label, barrier_every).
BARRIER_CHOICES = (("every step", 1), ("every 2 steps", 2), ("only at the end", 0))
#: The slow-rank choice that makes a different rank slow at each step.
ROTATE = "rotate"
#: Seconds a run may take beyond what the cost model predicts before the launcher stops it.
DEADLINE_MARGIN = 5.0
#: Resolution of the explorer's PNG (pixels per inch of the figure): 880 pixels wide.
DPI = 80
#: Figure width and the fixed margins of its layout (lane labels, wait notes, title, legend), in inches.
WIDTH, LEFT, RIGHT, TOP, BOTTOM = 11.0, 1.45, 1.55, 0.6, 0.85
#: Colour of the cost model's line (Okabe-Ito reddish purple, apart from the timeline's colours).
MODEL_COLOUR = "#CC79A7"
#: Height of one rank's lane and of the band for barrier labels above the lanes, in inches.
LANE, BAND = 0.42, 0.45


class Exploration(tuple):
    """What :func:`explore_straggler` returns: ``(run, figure)``, plus the ``settings`` it ran with and the
    model's ``predicted`` seconds.  Unpacks like the pair it is; shows as its figure in Jupyter."""

    run: Run
    figure: Figure
    settings: dict
    predicted: float

    def __new__(cls, run: Run, figure: Figure, settings: dict, predicted: float) -> Exploration:
        self = super().__new__(cls, (run, figure))
        self.run, self.figure, self.settings, self.predicted = run, figure, dict(settings), predicted
        return self

    def _repr_png_(self) -> bytes:
        return png(self.figure)


def _check(world_size, delay, slow_rank, barrier_every, steps, base_compute) -> None:
    for name, value in (("world_size", world_size), ("barrier_every", barrier_every), ("steps", steps)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    for name, value in (("delay", delay), ("base_compute", base_compute)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must be >= 0 seconds, not {value}")
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, not {world_size}")
    if steps < 1:
        raise ValueError(f"steps must be >= 1, not {steps}")
    if barrier_every < 0:
        raise ValueError(f"barrier_every must be >= 0 (0: only at the end), not {barrier_every}")
    if slow_rank != ROTATE and (
        isinstance(slow_rank, bool) or not isinstance(slow_rank, int) or not 0 <= slow_rank < world_size
    ):
        raise ValueError(f"slow_rank must be a rank in 0..{world_size - 1} or {ROTATE!r}, not {slow_rank!r}")


def explore_straggler(
    world_size: int = DEFAULT_WORLD_SIZE,
    delay: float = DEFAULT_DELAY,
    slow_rank: int | str = 1,
    barrier_every: int = 1,
    *,
    steps: int = DEFAULT_STEPS,
    base_compute: float = DEFAULT_BASE_COMPUTE,
    deadline: float | None = None,
    figure: Figure | None = None,
) -> Exploration:
    """Run the straggler scenario once; return the Run and a figure of its timeline beside the cost model.

    ``slow_rank`` is a rank or ``"rotate"`` (a different rank each step); ``barrier_every=0`` means a
    barrier only at the end.  ``deadline`` (seconds) bounds the run: by default the modelled time + 5 s.
    ``figure``: draw into this Figure (cleared first) instead of a new one, as the explorer does.
    """
    _check(world_size, delay, slow_rank, barrier_every, steps, base_compute)
    settings = dict(
        steps=steps, slow_rank=slow_rank, delay=delay, barrier_every=barrier_every, base_compute=base_compute
    )
    predicted = straggler.predicted_seconds(world_size, **settings)
    if deadline is None:
        deadline = predicted + DEADLINE_MARGIN
    result = launch_run(
        straggler.scenario, world_size, kwargs=settings, timeout=deadline, deadline=deadline, live=False
    )
    return Exploration(
        result, draw(result, predicted, settings, figure), dict(settings, world_size=world_size), predicted
    )


def figure_size(world_size: int) -> tuple[float, float]:
    """Width and height (inches) of the explorer's figure for ``world_size`` lanes."""
    return WIDTH, TOP + BAND + LANE * world_size + BOTTOM


def draw(result: Run, predicted: float, settings: dict, figure: Figure | None = None) -> Figure:
    """The explorer's figure: the run's timeline from the first rank's start, with the cost model on it.

    The model is checked against the measurement in the picture: a dashed line where the model says the
    function ends (first rank's start + predicted seconds), both durations in the title.  A fixed layout in
    inches (margins for the lane labels, the wait notes, the title and the legend), so saving it needs one
    drawing pass and no layout engine; ``figure`` is cleared and reused if given.
    """
    from matplotlib.lines import Line2D

    size = figure_size(result.world_size)
    fig = figure if figure is not None else TimelineFigure(figsize=size)
    fig.clear()
    fig.set_size_inches(*size, forward=False)
    w, h = size
    lanes = fig.add_axes((LEFT / w, BOTTOM / h, (w - LEFT - RIGHT) / w, (h - BOTTOM - TOP) / h))
    slow = "a different rank each step" if settings["slow_rank"] == ROTATE else f"rank {settings['slow_rank']}"
    every = dict((v, k) for k, v in BARRIER_CHOICES).get(
        settings["barrier_every"], f"every {settings['barrier_every']} steps"
    )
    measured = function_seconds(result)
    took = "did not finish" if measured is None else f"measured {measured:.2f} s"
    timeline(
        result,
        ax=lanes,
        since="function",
        title=f"{result.world_size} ranks, {slow} slow by {settings['delay']:.2f} s, barrier {every}\n"
        f"function start to end: model {predicted:.2f} s, {took}",
    )
    handles = []
    legend = lanes.get_legend()
    if legend is not None:
        handles = list(legend.legend_handles)
        legend.remove()
    started = [r.started for r in result if r.started is not None]
    if started:
        end = min(started) + predicted
        lanes.axvline(end, color=MODEL_COLOUR, linestyle="--", linewidth=1.4, zorder=7)
        ended = [r.ended for r in result if r.ended is not None]
        left, right = lanes.get_xlim()
        # up to the last rank's end or the model's, whichever is later (all of the run if a rank never ended)
        last = max(ended + [end]) if len(ended) == result.world_size else max(right, end)
        lanes.set_xlim(left, last + 0.04 * (last - left))
        handles.append(
            Line2D([], [], color=MODEL_COLOUR, linestyle="--", linewidth=1.4, label="model: the function ends here")
        )
    if handles:
        fig.legend(
            handles=handles,
            loc="lower center",
            bbox_to_anchor=(0.5, 0.0),
            ncols=min(4, len(handles)),
            frameon=False,
            fontsize=8,
        )
    return fig


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes at the explorer's resolution (what a stored notebook shows)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def svg(fig: Figure) -> bytes:
    """The figure as SVG with its text left to the browser: what the live explorer shows. Rasterising the
    glyphs was most of a PNG's cost (0.10 s against 0.04 s for this figure on 2 cores; benchmarks/explorer.py)."""
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "barrierlab"}):
        fig.savefig(buffer, format="svg")
    return buffer.getvalue()


def summary_html(result: Run, predicted: float | None = None) -> str:
    """A few lines of HTML: measured vs modelled time, who was slowest, each rank's idle fraction."""
    if not result.ok:
        return f"<b>The run did not finish:</b> {html.escape(result.headline())}<br>" + "<br>".join(
            html.escape(r.summary()) for r in result if not r.ok
        )
    numbers = result.waits()
    measured = function_seconds(result)
    head = f"<b>measured</b> {measured:.2f} s"
    if predicted is not None:
        head += f", <b>model</b> (slowest rank + barrier latency, per stretch) {predicted:.2f} s"
    who = numbers.straggler
    head += f"; {'rank ' + str(who) + ' held the others up' if who is not None else 'no single straggler'}"
    idle = ", ".join(f"rank {r}: {100 * n.idle_fraction:.0f}%" for r, n in numbers.ranks.items())
    return f"{head}<br><b>idle</b> (share of the time spent waiting): {idle}"


def _slow_rank_options(world_size: int) -> list[tuple[str, int | str]]:
    return [(str(r), r) for r in range(world_size)] + [("each in turn", ROTATE)]


class StragglerExplorer(widgets.VBox):
    """Controls for the straggler scenario, the timeline of the last run (an Image) and its summary (HTML).

    ``controls`` maps each control's description ("world size", "delay (s)", "slow rank", "barrier every")
    to the widget; changing any of them re-runs and redraws (``update()`` does the same by hand).
    ``run``, ``figure`` and ``predicted`` hold the last result; ``image`` and ``summary`` what is shown;
    ``status`` says "running the ranks…" during a redraw and how long the last one took after it;
    ``timings`` holds the seconds of the last redraw: ``run`` (the ranks), ``draw`` (figure + PNG), ``total``.
    """

    def __init__(
        self,
        world_size: int = DEFAULT_WORLD_SIZE,
        delay: float = DEFAULT_DELAY,
        slow_rank: int | str = 1,
        barrier_every: int = 1,
        *,
        steps: int = DEFAULT_STEPS,
        base_compute: float = DEFAULT_BASE_COMPUTE,
        initial: tuple[Run, Figure] | None = None,
    ) -> None:
        if isinstance(initial, Exploration):  # show the settings the initial result was made with
            world_size, delay, slow_rank, barrier_every, steps, base_compute = (
                initial.settings[k]
                for k in ("world_size", "delay", "slow_rank", "barrier_every", "steps", "base_compute")
            )
        _check(world_size, delay, slow_rank, barrier_every, steps, base_compute)
        self.steps, self.base_compute = steps, base_compute
        common = dict(continuous_update=False, style={"description_width": "initial"})
        every = dict(BARRIER_CHOICES)
        barrier_options = list(BARRIER_CHOICES) + (
            [] if barrier_every in every.values() else [(f"every {barrier_every} steps", barrier_every)]
        )
        self.controls = {
            "world size": widgets.IntSlider(
                value=world_size,
                min=WORLD_SIZES[0],
                max=max(WORLD_SIZES[1], world_size),
                description="world size",
                **common,
            ),
            "delay (s)": widgets.FloatSlider(
                value=delay,
                min=0.0,
                max=max(MAX_DELAY, delay),
                step=DELAY_STEP,
                readout_format=".2f",
                description="delay (s)",
                **common,
            ),
            "slow rank": widgets.Dropdown(
                options=_slow_rank_options(world_size), value=slow_rank, description="slow rank", style=common["style"]
            ),
            "barrier every": widgets.Dropdown(
                options=barrier_options, value=barrier_every, description="barrier every", style=common["style"]
            ),
        }
        # On a 1280x720 projector the figure shrinks to fit (aspect kept) instead of pushing the controls away.
        self.image = widgets.Image(
            format="svg+xml",
            layout=widgets.Layout(width="100%", max_width="1100px", max_height="64vh", object_fit="contain"),
        )
        self.image.add_class("barrierlab-explorer")
        self.summary = widgets.HTML()
        self.summary.add_class("barrierlab-explorer-summary")
        self.status = widgets.Label()
        self.status.add_class("barrierlab-explorer-status")
        c = self.controls
        super().__init__(
            children=[
                widgets.HBox([c["world size"], c["delay (s)"]]),
                widgets.HBox([c["slow rank"], c["barrier every"], self.status]),
                self.image,
                self.summary,
            ]
        )
        self.add_class("barrierlab-explorer-panel")
        self.run: Run | None = None
        self.figure: Figure | None = None
        self.predicted: float | None = None
        self.timings: dict[str, float] = {}
        self._quiet = False
        c["world size"].observe(self._world_size_changed, names="value")
        for name in ("delay (s)", "slow rank", "barrier every"):
            c[name].observe(self._changed, names="value")
        if initial is not None:
            started = time.perf_counter()
            self._show(*initial[:2])
            self.timings = dict(run=0.0, draw=time.perf_counter() - started, total=time.perf_counter() - started)
        else:
            self.update()

    def settings(self) -> dict:
        """The current control values as arguments of :func:`explore_straggler`."""
        c = self.controls
        return dict(
            world_size=c["world size"].value,
            delay=round(c["delay (s)"].value, 3),
            slow_rank=c["slow rank"].value,
            barrier_every=c["barrier every"].value,
        )

    def update(self) -> None:
        """Run the scenario with the current settings and show the new timeline and summary."""
        s = self.settings()
        self.status.value = f"running {s['world_size']} ranks…"
        started = time.perf_counter()
        try:
            settings = dict(
                steps=self.steps,
                slow_rank=s["slow_rank"],
                delay=s["delay"],
                barrier_every=s["barrier_every"],
                base_compute=self.base_compute,
            )
            predicted = straggler.predicted_seconds(s["world_size"], **settings)
            deadline = predicted + DEADLINE_MARGIN
            result = launch_run(
                straggler.scenario, s["world_size"], kwargs=settings, timeout=deadline, live=False, deadline=deadline
            )
            ran = time.perf_counter()
            self.figure = draw(result, predicted, settings, self.figure)
            self._show(result, self.figure)
        except Exception as error:  # a widget callback has nowhere to raise to: say it in the summary
            self.summary.value = f"<b>Could not run:</b> {html.escape(f'{type(error).__name__}: {error}')}"
            self.status.value = ""
            return
        done = time.perf_counter()
        self.timings = dict(run=ran - started, draw=done - ran, total=done - started)
        self.status.value = (
            f"redrawn in {self.timings['total']:.2f} s (ranks {self.timings['run']:.2f} s, "
            f"drawing {self.timings['draw']:.2f} s)"
        )

    def _show(self, result: Run, figure: Figure) -> None:
        s = self.settings()
        self.predicted = straggler.predicted_seconds(
            s["world_size"],
            steps=self.steps,
            slow_rank=s["slow_rank"],
            delay=s["delay"],
            barrier_every=s["barrier_every"],
            base_compute=self.base_compute,
        )
        self.run, self.figure = result, figure
        self.image.value = svg(figure)
        self.summary.value = summary_html(result, self.predicted)
        self.status.value = ""

    def _changed(self, change) -> None:
        if not self._quiet:
            self.update()

    def _world_size_changed(self, change) -> None:
        rank = self.controls["slow rank"]
        keep = rank.value if rank.value == ROTATE or rank.value < change["new"] else change["new"] - 1
        self._quiet = True
        try:
            rank.options = _slow_rank_options(change["new"])
            rank.value = keep
        finally:
            self._quiet = False
        self.update()

    def __repr__(self) -> str:
        s = self.settings()
        return (
            f"StragglerExplorer(world size={s['world_size']}, delay={s['delay']:.2f} s, "
            f"slow rank={s['slow_rank']}, barrier every={s['barrier_every']})"
        )


def straggler_explorer(
    world_size: int = DEFAULT_WORLD_SIZE,
    delay: float = DEFAULT_DELAY,
    slow_rank: int | str = 1,
    barrier_every: int = 1,
    *,
    steps: int = DEFAULT_STEPS,
    base_compute: float = DEFAULT_BASE_COMPUTE,
    initial: tuple[Run, Figure] | None = None,
) -> StragglerExplorer:
    """The straggler explorer widget; ``initial=explore_straggler(...)`` shows that result, and its settings,
    instead of running again."""
    return StragglerExplorer(
        world_size, delay, slow_rank, barrier_every, steps=steps, base_compute=base_compute, initial=initial
    )
