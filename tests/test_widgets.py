"""Tests for barrierlab.widgets: the straggler explorer re-runs and redraws when a control changes, without a browser."""

from __future__ import annotations

import ipywidgets
import pytest
from matplotlib.figure import Figure

from barrierlab import plot, widgets

#: Small, quick settings: 2 steps, a 0.15 s straggler (well above the 20 ms straggler threshold).
QUICK = dict(steps=2, base_compute=0.02)


def test_explore_straggler_runs_the_scenario_and_returns_its_timeline(no_leftovers):
    run, fig = widgets.explore_straggler(world_size=3, delay=0.15, slow_rank=2, barrier_every=1, **QUICK)
    assert run.ok and run.world_size == 3
    assert run.summary()["straggler"] == 2
    assert isinstance(fig, Figure)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["3 ranks, rank 2 slow by 0.15 s, barrier every step",
                                                       "total time"]


def test_explore_straggler_is_bounded_by_its_deadline(no_leftovers):
    run, fig = widgets.explore_straggler(world_size=2, delay=0.5, slow_rank=1, barrier_every=1, steps=3,
                                         deadline=0.6)
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
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert repr(explorer) == "StragglerExplorer(world size=2, delay=0.15 s, slow rank=1, barrier every=1)"


def test_changing_a_control_reruns_and_redraws(no_leftovers):
    explorer = widgets.straggler_explorer(world_size=2, delay=0.15, slow_rank=1, **QUICK)
    first_run, first_png, first_summary = explorer.run, explorer.image.value, explorer.summary.value
    assert "rank 1 held the others up" in first_summary

    explorer.controls["slow rank"].value = 0

    assert explorer.run is not first_run and explorer.run.ok
    assert explorer.run.summary()["straggler"] == 0
    assert explorer.image.value != first_png
    assert "rank 0 held the others up" in explorer.summary.value


def test_a_smaller_world_size_keeps_the_slow_rank_a_member(no_leftovers):
    explorer = widgets.straggler_explorer(world_size=3, delay=0.15, slow_rank=2, **QUICK)
    explorer.controls["world size"].value = 2
    assert explorer.controls["slow rank"].value == 1
    assert [value for _, value in explorer.controls["slow rank"].options] == [0, 1, widgets.ROTATE]
    assert explorer.run.world_size == 2 and explorer.run.summary()["straggler"] == 1


def test_initial_result_is_shown_without_running_again():
    run, fig = widgets.explore_straggler(world_size=2, delay=0.15, slow_rank=1, **QUICK)
    explorer = widgets.straggler_explorer(world_size=2, delay=0.15, slow_rank=1, initial=(run, fig), **QUICK)
    assert explorer.run is run and explorer.figure is fig


@pytest.mark.parametrize("every, expected", [(1, 0.4), (0, 0.3)])
def test_cost_model_pays_the_imbalance_of_each_stretch(every, expected):
    from barrierlab.scenarios import straggler

    # 2 ranks, a different one 0.1 s late each step: a barrier per step pays both late steps, none pays one.
    seconds = straggler.predicted_seconds(2, steps=2, slow_rank="rotate", delay=0.1, barrier_every=every,
                                          base_compute=0.1, latency=0.0)
    assert seconds == pytest.approx(expected)


def test_compare_timelines_shares_one_time_axis(no_leftovers):
    from barrierlab import run as launch
    from barrierlab.scenarios import straggler

    short = launch(straggler.scenario, 2, kwargs=dict(steps=1, delay=0.1, base_compute=0.0))
    long = launch(straggler.scenario, 2, kwargs=dict(steps=2, delay=0.1, base_compute=0.0))
    fig = plot.compare_timelines({"short": short, "long": long})
    assert fig.axes[0].get_xlim() == fig.axes[1].get_xlim()
    assert fig.axes[0].get_title().startswith("short: ")
