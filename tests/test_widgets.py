"""Tests for barrierlab.widgets: the straggler explorer re-runs and redraws when a control changes, without a browser."""

from __future__ import annotations

import ipywidgets
import pytest
from matplotlib.figure import Figure

from barrierlab import plot, waits, widgets
from barrierlab.scenarios import straggler

#: Small, quick settings: 2 steps, a 0.15 s straggler (well above the 20 ms straggler threshold).
QUICK = dict(steps=2, base_compute=0.02)


def test_explore_straggler_runs_the_scenario_and_returns_its_timeline(no_leftovers):
    run, fig = widgets.explore_straggler(world_size=3, delay=0.15, slow_rank=2, barrier_every=1, **QUICK)
    assert run.ok and run.world_size == 3
    assert run.waits().straggler == 2
    assert isinstance(fig, Figure)
    title = fig.axes[0].get_title()
    assert title.startswith("3 ranks, rank 2 slow by 0.15 s, barrier every step\nfunction start to end: model ")
    assert f"measured {waits.function_seconds(run):.2f} s" in title


def test_the_figure_draws_the_cost_model_where_it_says_the_function_ends(no_leftovers):
    run, fig = widgets.explore_straggler(world_size=2, delay=0.15, slow_rank=1, **QUICK)
    predicted = straggler.predicted_seconds(2, delay=0.15, slow_rank=1, **QUICK)
    model_lines = [line for line in fig.axes[0].lines if line.get_linestyle() == "--"]
    assert len(model_lines) == 1
    assert model_lines[0].get_xdata()[0] == pytest.approx(min(r.started for r in run) + predicted)
    assert "model: the function ends here" in [t.get_text() for t in fig.legends[0].get_texts()]
    left, right = fig.axes[0].get_xlim()
    assert left == pytest.approx(min(r.started for r in run))  # from the first rank's start: no launch gap
    assert right >= max(r.ended for r in run)


def test_exploration_unpacks_as_run_and_figure_and_keeps_its_settings(no_leftovers):
    result = widgets.explore_straggler(world_size=2, delay=0.15, slow_rank="rotate", barrier_every=0, **QUICK)
    run, fig = result
    assert result.run is run and result.figure is fig and result[1] is fig
    assert result.settings == dict(world_size=2, delay=0.15, slow_rank="rotate", barrier_every=0, **QUICK)
    assert result.predicted == straggler.predicted_seconds(2, delay=0.15, slow_rank="rotate", barrier_every=0, **QUICK)
    assert result._repr_png_().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(world_size=2.0), TypeError, "world_size must be an int"),
        (dict(delay="0.1"), TypeError, "delay must be a number of seconds"),
        (dict(delay=-0.1), ValueError, "delay must be >= 0"),
        (dict(world_size=2, slow_rank=2), ValueError, "slow_rank must be a rank in 0..1 or 'rotate'"),
        (dict(barrier_every=-1), ValueError, "barrier_every must be >= 0"),
        (dict(steps=0), ValueError, "steps must be >= 1"),
    ],
)
def test_bad_settings_are_refused_before_any_rank_starts(kwargs, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(".", r"\.")):
        widgets.explore_straggler(**kwargs)


def test_a_redrawn_figure_reuses_the_same_figure_and_resizes_it(no_leftovers):
    run2, fig = widgets.explore_straggler(world_size=2, delay=0.15, slow_rank=1, **QUICK)
    run3, again = widgets.explore_straggler(world_size=3, delay=0.15, slow_rank=1, figure=fig, **QUICK)
    assert again is fig
    assert tuple(fig.get_size_inches()) == pytest.approx(widgets.figure_size(3))
    assert widgets.figure_size(8)[1] > widgets.figure_size(3)[1]
    assert fig.axes[0].get_title().startswith("3 ranks")


def test_defaults_keep_an_80_ms_straggler_in_a_run_under_0_4_s():
    # 80 ms: 10x the 95th-percentile step jitter measured on 1 CPU at 8 ranks, 7.6 ms at worst in three runs
    # of benchmarks/explorer.py (4.9 ms at 4 ranks); the benchmark prints the measured one
    assert widgets.DEFAULT_DELAY >= 0.08
    assert (
        straggler.predicted_seconds(
            widgets.DEFAULT_WORLD_SIZE,
            steps=widgets.DEFAULT_STEPS,
            delay=widgets.DEFAULT_DELAY,
            base_compute=widgets.DEFAULT_BASE_COMPUTE,
        )
        < 0.4
    )


def test_explore_straggler_is_bounded_by_its_deadline(no_leftovers):
    run, fig = widgets.explore_straggler(world_size=2, delay=0.5, slow_rank=1, barrier_every=1, steps=3, deadline=0.6)
    assert run.hit_deadline and not run.ok
    assert "did not finish" in widgets.summary_html(run)
    assert isinstance(fig, Figure)


def test_explorer_has_stable_control_descriptions_and_css_classes(no_leftovers):
    explorer = widgets.straggler_explorer(world_size=2, delay=0.15, slow_rank=1, **QUICK)
    assert isinstance(explorer, ipywidgets.Widget)
    assert set(explorer.controls) == {"world size", "delay (s)", "slow rank", "barrier every"}
    assert all(control.description == name for name, control in explorer.controls.items())
    assert all(not getattr(c, "continuous_update", False) for c in explorer.controls.values())
    assert "barrierlab-explorer" in explorer.image._dom_classes
    # on a 1280x720 projector the figure shrinks (aspect kept) instead of pushing the controls off screen
    assert explorer.image.layout.max_height == "64vh" and explorer.image.layout.object_fit == "contain"
    assert explorer.image.format == "svg+xml" and b"<svg" in bytes(explorer.image.value)[:400]
    assert repr(explorer) == "StragglerExplorer(world size=2, delay=0.15 s, slow rank=1, barrier every=1)"


def test_changing_a_control_reruns_and_redraws(no_leftovers):
    explorer = widgets.straggler_explorer(world_size=2, delay=0.15, slow_rank=1, **QUICK)
    first_run, first_png, first_summary = explorer.run, explorer.image.value, explorer.summary.value
    assert "rank 1 held the others up" in first_summary

    explorer.controls["slow rank"].value = 0

    assert explorer.run is not first_run and explorer.run.ok
    assert explorer.run.waits().straggler == 0
    assert explorer.image.value != first_png
    assert "rank 0 held the others up" in explorer.summary.value


def test_a_smaller_world_size_keeps_the_slow_rank_a_member(no_leftovers):
    explorer = widgets.straggler_explorer(world_size=3, delay=0.15, slow_rank=2, **QUICK)
    explorer.controls["world size"].value = 2
    assert explorer.controls["slow rank"].value == 1
    assert [value for _, value in explorer.controls["slow rank"].options] == [0, 1, widgets.ROTATE]
    assert explorer.run.world_size == 2 and explorer.run.waits().straggler == 1


def test_initial_result_is_shown_without_running_again():
    run, fig = widgets.explore_straggler(world_size=2, delay=0.15, slow_rank=1, **QUICK)
    explorer = widgets.straggler_explorer(world_size=2, delay=0.15, slow_rank=1, initial=(run, fig), **QUICK)
    assert explorer.run is run and explorer.figure is fig


def test_initial_exploration_sets_the_controls_to_the_settings_it_ran_with(no_leftovers):
    # the notebook's call: straggler_explorer(initial=explore_straggler(...)) with no settings of its own
    initial = widgets.explore_straggler(world_size=3, delay=0.14, slow_rank=2, barrier_every=2, **QUICK)
    explorer = widgets.straggler_explorer(initial=initial)
    assert explorer.run is initial.run
    assert explorer.settings() == dict(world_size=3, delay=0.14, slow_rank=2, barrier_every=2)
    assert (explorer.steps, explorer.base_compute) == (QUICK["steps"], QUICK["base_compute"])


def test_a_redraw_reports_its_time_split_into_ranks_and_drawing(no_leftovers):
    explorer = widgets.straggler_explorer(world_size=2, delay=0.15, slow_rank=1, **QUICK)
    figure = explorer.figure
    explorer.controls["delay (s)"].value = 0.1
    t = explorer.timings
    assert set(t) == {"run", "draw", "total"} and t["run"] > 0 and t["draw"] > 0
    assert t["total"] == pytest.approx(t["run"] + t["draw"])
    assert explorer.status.value.startswith(f"redrawn in {t['total']:.2f} s")
    assert explorer.figure is figure  # drawn into the same figure again


@pytest.mark.parametrize("every, expected", [(1, 0.4), (0, 0.3)])
def test_cost_model_pays_the_imbalance_of_each_stretch(every, expected):
    from barrierlab.scenarios import straggler

    # 2 ranks, a different one 0.1 s late each step: a barrier per step pays both late steps, none pays one.
    seconds = straggler.predicted_seconds(
        2, steps=2, slow_rank="rotate", delay=0.1, barrier_every=every, base_compute=0.1, latency=0.0
    )
    assert seconds == pytest.approx(expected)


def test_compare_timelines_shares_one_time_axis(no_leftovers):
    from barrierlab import run as launch
    from barrierlab.scenarios import straggler

    short = launch(straggler.scenario, 2, kwargs=dict(steps=1, delay=0.1, base_compute=0.0))
    long = launch(straggler.scenario, 2, kwargs=dict(steps=2, delay=0.1, base_compute=0.0))
    fig = plot.compare_timelines({"short": short, "long": long})
    assert fig.axes[0].get_xlim() == fig.axes[1].get_xlim()
    assert fig.axes[0].get_title().startswith("short: ")
