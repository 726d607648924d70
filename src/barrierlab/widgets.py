"""Interactive explorers: move a control, the ranks run again, the timeline and its cost are redrawn.

``explore_straggler(...)`` is the plain function behind the straggler explorer: one run of
``barrierlab.scenarios.straggler`` and a figure (timeline + measured vs modelled time), usable without a
browser.  ``straggler_explorer(...)`` wraps it in ipywidgets controls.  Every re-run is bounded by a
deadline (the launcher kills what is left), and controls update only on release (``continuous_update=False``).
"""

from __future__ import annotations

import html
import io

import ipywidgets as widgets
from matplotlib.figure import Figure

from barrierlab.launch import run as launch_run
from barrierlab.plot import TimelineFigure, function_seconds, summary, timeline
from barrierlab.result import Run
from barrierlab.scenarios import straggler

#: World sizes the explorer offers: past 8 ranks on a laptop the timeline is a blur of scheduling noise.
WORLD_SIZES = (2, 8)
#: Largest straggler delay the explorer offers, in seconds (with 6 steps a run stays under 4 s).
MAX_DELAY = 0.5
#: Barrier frequencies offered: (label, barrier_every).
BARRIER_CHOICES = (("every step", 1), ("every 2 steps", 2), ("every 3 steps", 3), ("only at the end", 0))
#: The slow-rank choice that makes a different rank slow at each step.
ROTATE = "rotate"
#: Seconds a run may take beyond what the cost model predicts before the launcher stops it.
DEADLINE_MARGIN = 5.0


def explore_straggler(world_size: int = 4, delay: float = 0.15, slow_rank: int | str = 1, barrier_every: int = 1,
                      *, steps: int = 6, base_compute: float = 0.05, deadline: float | None = None
                      ) -> tuple[Run, Figure]:
    """Run the straggler scenario once; return the Run and a figure of its timeline beside the cost model.

    ``slow_rank`` is a rank or ``"rotate"`` (a different rank each step); ``barrier_every=0`` means a
    barrier only at the end.  ``deadline`` (seconds) bounds the run: by default the modelled time + 5 s.
    """
    settings = dict(steps=steps, slow_rank=slow_rank, delay=delay, barrier_every=barrier_every,
                    base_compute=base_compute)
    predicted = straggler.predicted_seconds(world_size, **settings)
    if deadline is None:
        deadline = predicted + DEADLINE_MARGIN
    result = launch_run(straggler.scenario, world_size, kwargs=settings, timeout=deadline, deadline=deadline)
    return result, _figure(result, predicted, settings)


def _figure(result: Run, predicted: float, settings: dict) -> Figure:
    fig = TimelineFigure(figsize=(11, 2.6 + 0.42 * result.world_size), layout="constrained")
    lanes, cost = fig.subplots(1, 2, width_ratios=(5, 1))
    slow = "a different rank each step" if settings["slow_rank"] == ROTATE else f"rank {settings['slow_rank']}"
    every = dict((v, k) for k, v in BARRIER_CHOICES).get(settings["barrier_every"],
                                                          f"every {settings['barrier_every']} steps")
    timeline(result, ax=lanes, title=f"{result.world_size} ranks, {slow} slow by {settings['delay']:.2f} s, "
                                     f"barrier {every}")
    legend = lanes.get_legend()
    if legend is not None:
        handles = legend.legend_handles
        legend.remove()
        fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False, fontsize=8)
    measured = function_seconds(result)
    heights = [predicted, measured or 0.0]
    bars = cost.bar(["model", "measured"], heights, color=["#BBBBBB", "#0072B2"])
    for bar, value in zip(bars, (predicted, measured)):
        cost.annotate("did not finish" if value is None else f"{value:.2f} s", (bar.get_x() + bar.get_width() / 2,
                      bar.get_height()), ha="center", va="bottom", fontsize=8)
    cost.set_ylim(0, max(heights) * 1.25 or 1.0)
    cost.set_ylabel("seconds, function start to end", fontsize=8)
    cost.tick_params(labelsize=8)
    cost.set_title("total time", fontsize=11)
    for side in ("top", "right"):
        cost.spines[side].set_visible(False)
    return fig


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()


def summary_html(result: Run, predicted: float | None = None) -> str:
    """A few lines of HTML: measured vs modelled time, who was slowest, each rank's idle fraction."""
    if not result.ok:
        return (f"<b>The run did not finish:</b> {html.escape(result.headline())}<br>"
                + "<br>".join(html.escape(r.summary()) for r in result if not r.ok))
    numbers = summary(result)
    measured = function_seconds(result)
    head = f"<b>measured</b> {measured:.2f} s"
    if predicted is not None:
        head += f", <b>model</b> (slowest rank + barrier latency, per stretch) {predicted:.2f} s"
    who = numbers["straggler"]
    head += f"; {'rank ' + str(who) + ' held the others up' if who is not None else 'no single straggler'}"
    idle = ", ".join(f"rank {r}: {100 * n['idle_fraction']:.0f}%" for r, n in numbers["ranks"].items())
    return f"{head}<br><b>idle</b> (share of the time spent waiting): {idle}"


def _slow_rank_options(world_size: int) -> list[tuple[str, int | str]]:
    return [(str(r), r) for r in range(world_size)] + [("each in turn", ROTATE)]


class StragglerExplorer(widgets.VBox):
    """Controls for the straggler scenario, the timeline of the last run (an Image) and its summary (HTML).

    ``controls`` maps each control's description ("world size", "delay (s)", "slow rank", "barrier every")
    to the widget; changing any of them re-runs and redraws (``update()`` does the same by hand).
    ``run``, ``figure`` and ``predicted`` hold the last result; ``image`` and ``summary`` what is shown.
    """

    def __init__(self, world_size: int = 4, delay: float = 0.15, slow_rank: int | str = 1, barrier_every: int = 1,
                 *, steps: int = 6, base_compute: float = 0.05, initial: tuple[Run, Figure] | None = None) -> None:
        self.steps, self.base_compute = steps, base_compute
        common = dict(continuous_update=False, style={"description_width": "initial"})
        self.controls = {
            "world size": widgets.IntSlider(value=world_size, min=WORLD_SIZES[0], max=WORLD_SIZES[1],
                                            description="world size", **common),
            "delay (s)": widgets.FloatSlider(value=delay, min=0.0, max=MAX_DELAY, step=0.05, readout_format=".2f",
                                             description="delay (s)", **common),
            "slow rank": widgets.Dropdown(options=_slow_rank_options(world_size), value=slow_rank,
                                          description="slow rank", style=common["style"]),
            "barrier every": widgets.Dropdown(options=BARRIER_CHOICES, value=barrier_every,
                                              description="barrier every", style=common["style"]),
        }
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="100%", max_width="1100px"))
        self.image.add_class("barrierlab-explorer")
        self.summary = widgets.HTML()
        self.summary.add_class("barrierlab-explorer-summary")
        self.status = widgets.Label()
        c = self.controls
        super().__init__(children=[
            widgets.HBox([c["world size"], c["delay (s)"]]),
            widgets.HBox([c["slow rank"], c["barrier every"], self.status]),
            self.image, self.summary,
        ])
        self.add_class("barrierlab-explorer-panel")
        self.run: Run | None = None
        self.figure: Figure | None = None
        self.predicted: float | None = None
        self._quiet = False
        c["world size"].observe(self._world_size_changed, names="value")
        for name in ("delay (s)", "slow rank", "barrier every"):
            c[name].observe(self._changed, names="value")
        if initial is not None:
            self._show(*initial)
        else:
            self.update()

    def settings(self) -> dict:
        """The current control values as arguments of :func:`explore_straggler`."""
        c = self.controls
        return dict(world_size=c["world size"].value, delay=round(c["delay (s)"].value, 3),
                    slow_rank=c["slow rank"].value, barrier_every=c["barrier every"].value)

    def update(self) -> None:
        """Run the scenario with the current settings and show the new timeline and summary."""
        self.status.value = "running the ranks…"
        try:
            self._show(*explore_straggler(**self.settings(), steps=self.steps, base_compute=self.base_compute))
        except Exception as error:  # a widget callback has nowhere to raise to: say it in the summary
            self.summary.value = f"<b>Could not run:</b> {html.escape(f'{type(error).__name__}: {error}')}"
            self.status.value = ""

    def _show(self, result: Run, figure: Figure) -> None:
        s = self.settings()
        self.predicted = straggler.predicted_seconds(s["world_size"], steps=self.steps, slow_rank=s["slow_rank"],
                                                     delay=s["delay"], barrier_every=s["barrier_every"],
                                                     base_compute=self.base_compute)
        self.run, self.figure = result, figure
        self.image.value = _png(figure)
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
        return (f"StragglerExplorer(world size={s['world_size']}, delay={s['delay']:.2f} s, "
                f"slow rank={s['slow_rank']}, barrier every={s['barrier_every']})")


def straggler_explorer(world_size: int = 4, delay: float = 0.15, slow_rank: int | str = 1, barrier_every: int = 1,
                       *, steps: int = 6, base_compute: float = 0.05,
                       initial: tuple[Run, Figure] | None = None) -> StragglerExplorer:
    """The straggler explorer widget; ``initial=explore_straggler(...)`` shows that result instead of running again."""
    return StragglerExplorer(world_size, delay, slow_rank, barrier_every, steps=steps, base_compute=base_compute,
                             initial=initial)
