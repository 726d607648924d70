"""Tests for barrierlab.plot and the numbers it draws (barrierlab.waits): straggler detection, timeline structure,
real runs. Events are written by the recorder's own writer at chosen times and read back (``recorded``)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time

import pytest
import torch.distributed as dist
from matplotlib.figure import Figure
from recorded import BACKWARD, DDP_BROADCAST, call, issued, rank_record, ranks, span

import barrierlab as bl
from barrierlab import plot, waits
from barrierlab._protocol import Status
from barrierlab.events import Event
from barrierlab.result import RankResult, Run
from barrierlab.words import issuer_word


def barrier_arrivals(arrivals: list[float], leave: float, op: str = "barrier") -> list[list[Event]]:
    """One collective per rank: rank r arrives at arrivals[r], all leave at ``leave``."""
    return ranks(*([call(op, t, leave)] for t in arrivals))


def y_labels(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_yticklabels()]


def artists(fig: Figure, gid: str) -> list:
    ax = fig.axes[0]
    return [a for a in [*ax.collections, *ax.texts] if a.get_gid() == gid]


def texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].texts]


def render(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


# --- summary -------------------------------------------------------------------------------------------


def hand_made() -> list[list[Event]]:
    rank0 = [
        span("compute", "forward", 0.0, 0.4),
        call("barrier", 0.1, 0.3),  # inside the compute span: 0.2 s
        span("wait", "sync", 0.5, 0.8),  # a wait span ...
        call("all_reduce", 0.6, 0.7),  # ... nested inside it: counts once
        call("all_reduce", 0.75, 0.9),  # overlaps its end: union 0.5-0.9
    ]
    rank1 = [span("compute", "forward", 0.0, 0.2), call("barrier", 0.2, None)]
    return ranks(rank0, rank1)


def test_summary_unions_nested_intervals_and_counts_never_ended_to_the_end():
    numbers = waits.measure(hand_made(), ends=[1.0, None])
    r0, r1 = numbers.ranks[0], numbers.ranks[1]
    assert numbers.total == pytest.approx(1.0)
    assert r0.wait == pytest.approx(0.2 + 0.4)
    assert r0.busy == pytest.approx(0.4)
    assert r0.idle_fraction == pytest.approx(0.6)
    assert (r0.start, r0.end, r0.collectives) == (0.0, 1.0, 3)
    assert r1.wait == pytest.approx(0.8)  # never left the barrier: counted until the run ended at 1.0
    assert r1.busy == pytest.approx(0.2)
    assert r1.end is None and r1.collectives == 1
    assert numbers.wait_total == pytest.approx(1.4)
    assert numbers.slowest_rank == 0


def test_summary_of_a_rank_that_never_started_is_zero():
    numbers = waits.measure(ranks([call("barrier", 0.1, 0.2)], []))
    assert numbers.ranks[1] == waits.RankWaits(
        busy=0.0, wait=0.0, idle_fraction=0.0, start=None, end=None, collectives=0
    )
    assert numbers.slowest_rank == 0 and numbers.straggler is None


def steps(last_ranks: list[int], world: int = 4, *, late: float = 0.2, names=None) -> list[list[Event]]:
    """One step per entry: every rank runs a span (``names[r]`` or "compute k"), the listed rank ``late``
    seconds longer, then a barrier that releases when it arrives."""
    lanes = [[] for _ in range(world)]
    t = 0.0
    for k, last in enumerate(last_ranks):
        release = t + 0.1 + late
        for r in range(world):
            arrive = release if r == last else t + 0.1
            name = names[r] if names else f"compute {k}"
            lanes[r].append(span("compute", name, t, arrive))
            lanes[r].append(call("barrier", arrive, release + 0.001))
        t = release + 0.001
    return ranks(*lanes)


def test_a_rank_last_at_every_step_doing_the_same_work_is_a_straggler():
    numbers = waits.measure(steps([2, 2, 2]))
    assert (numbers.straggler, numbers.last_to_arrive, numbers.last_at) == (2, 2, (3, 3))
    fig = plot.timeline(steps([2, 2, 2]))
    assert y_labels(fig)[2] == "rank 2 (straggler)"
    assert "arrived last every time" in fig.axes[0].get_title()


def test_one_barrier_makes_a_last_arrival_not_a_straggler():
    numbers = waits.measure(barrier_arrivals([0.0, 0.1, 0.2, 0.3], leave=0.31))
    assert numbers.slowest_rank == 3 and numbers.last_to_arrive == 3
    assert numbers.straggler is None
    fig = plot.timeline(barrier_arrivals([0.0, 0.1, 0.2, 0.3], leave=0.31))
    assert y_labels(fig) == ["rank 0", "rank 1", "rank 2", "rank 3 (last to arrive)"]
    assert "straggler" not in waits.measure(barrier_arrivals([0.0, 0.1, 0.2, 0.3], leave=0.31)).table()


def test_when_the_last_rank_changes_no_rank_is_called_straggler():
    lanes = steps([0, 1, 2, 3, 1])  # rank 1 waited least overall, but was last at only 2 of 5
    numbers = waits.measure(lanes)
    assert numbers.straggler is None and numbers.last_at[1] == 5
    labels = y_labels(plot.timeline(lanes))
    assert not any("straggler" in label for label in labels)
    assert not any("last to arrive" in label for label in labels)  # 2 of 5 is no majority: say nothing


def test_last_most_of_the_time_says_how_often():
    lanes = steps([3, 3, 3, 0])
    labels = y_labels(plot.timeline(lanes))
    assert labels[3] == "rank 3 (last to arrive at 3 of 4)"
    assert "straggler" not in " ".join(labels)


def test_a_rank_doing_work_only_it_has_is_last_to_arrive_not_a_straggler():
    lanes = steps([0, 0], names=["download", "setup", "setup", "setup"])  # rank 0 prepares the data
    numbers = waits.measure(lanes)
    assert numbers.own_work == ("download",) and numbers.straggler is None
    assert y_labels(plot.timeline(lanes))[0] == "rank 0 (last to arrive)"


@pytest.mark.parametrize(
    "arrivals",
    [
        [0.100, 0.105, 0.110, 0.112],  # everyone within a few ms: not > 20 ms
        [0.0, 0.0, 0.0, 0.2],  # others waited 0.5 s, rank 3 waited 0.3 s: not > 2x
    ],
)
def test_no_straggler_when_ranks_arrive_about_together(arrivals):
    numbers = waits.measure(barrier_arrivals(arrivals, leave=0.5))
    assert numbers.slowest_rank == 3
    assert numbers.straggler is None


def test_slowest_rank_ties_go_to_the_lowest_rank():
    assert waits.measure(barrier_arrivals([0.1, 0.1, 0.1], leave=0.2)).slowest_rank == 0


def test_releases_need_every_rank_and_the_same_op():
    lanes = ranks(
        *(
            [
                call("barrier", arrival, 0.25),
                call("all_reduce", 0.3 + 0.01 * r, 0.4),
                call("barrier" if r else "broadcast", 0.5, 0.6),  # ops differ
            ]
            + ([call("barrier", 0.7, None)] if r == 0 else [])  # rank 0 alone
            for r, arrival in enumerate([0.0, 0.1, 0.2])
        )
    )
    found = waits.measure(lanes).releases
    assert [(r.seq, r.op, r.last_rank) for r in found] == [(1, "barrier", 2), (2, "all_reduce", 2)]
    assert found[0].time == pytest.approx(0.2)
    fig = plot.timeline(lanes)
    (lines,) = artists(fig, "releases")
    assert len(lines.get_segments()) == 2
    assert {"barrier #1", "all_reduce #2"} <= set(texts(fig))


def test_waits_table_marks_the_straggler():
    table = waits.measure(steps([3, 3])).table()
    lines = table.splitlines()
    assert lines[0].split() == ["rank", "active", "s", "waited", "s", "idle", "%"]
    assert "straggler" in lines[4] and lines[4].split()[0] == "3"
    assert not any("straggler" in line for line in lines[1:4])


# --- timeline ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4, 16])
def test_timeline_has_one_lane_per_rank(n):
    fig = plot.timeline(barrier_arrivals([0.05 * r for r in range(n)], leave=0.05 * (n - 1) + 0.001))
    assert isinstance(fig, Figure)
    assert y_labels(fig) == [f"rank {r}" for r in range(n - 1)] + [f"rank {n - 1} (last to arrive)"]
    assert fig.axes[0].get_xlabel() == "seconds since launch"
    assert render(fig).startswith(b"\x89PNG")


def test_timeline_heights_grow_with_ranks():
    heights = [plot.timeline(barrier_arrivals([0.0] * n, leave=0.1)).get_figheight() for n in (2, 4, 16)]
    assert heights == sorted(heights) and heights[0] < heights[-1]


def test_an_instant_span_is_drawn_wide_enough_to_see():
    """A read that took microseconds (01's race) still shows as a bar, not a zero-width line."""
    lanes = ranks([span("io", "download", 0.0, 1.0)], [span("io", "read", 0.5, 0.5 + 1e-6)])
    fig = plot.timeline(lanes)
    fig.canvas.draw()
    ax = fig.axes[0]
    seconds = ax.get_xlim()[1] - ax.get_xlim()[0]
    inches_per_second = fig.get_figwidth() * ax.get_position().width / seconds
    (bars,) = artists(fig, "span:io")
    widths = [path.vertices[:, 0].max() - path.vertices[:, 0].min() for path in bars.get_paths()]
    assert min(widths) * inches_per_second >= 0.9 * plot.MIN_SPAN_INCHES
    assert max(widths) == pytest.approx(1.0)  # a long span keeps its true width


@pytest.mark.slow
def test_timeline_draws_16_ranks_of_1000_events():
    steps = [(0.002 * i, 0.002 * i + 0.001, 0.002 * (i + 1)) for i in range(500)]
    lanes = ranks(
        *(
            [x for a, b, c in steps for x in (span("compute", "step", a, b), call("all_reduce", b, c))]
            for _ in range(16)
        )
    )
    fig = plot.timeline(lanes)
    assert len(y_labels(fig)) == 16
    assert len(fig.axes[0].texts) <= plot.MAX_BAR_LABELS + plot.MAX_RELEASE_LABELS
    assert render(fig).startswith(b"\x89PNG")


def test_timeline_marks_a_rank_that_never_left_a_barrier():
    lanes = ranks([call("barrier", 0.1, None)], [span("compute", "work", 0.0, 0.2)])
    fig = plot.timeline(lanes, ends=[None, 0.2])
    (marks,) = artists(fig, "never-left")
    assert len(marks.get_offsets()) == 1
    assert any("stuck in barrier #1" in text for text in texts(fig))
    assert "never left" in fig.axes[0].get_title()


def test_timeline_without_events_and_with_partial_records():
    fig = plot.timeline([[], [], []], ends=[0.5, 0.6, None])
    assert y_labels(fig) == ["rank 0", "rank 1", "rank 2"]
    assert artists(fig, "running")
    fig = plot.timeline(ranks([span("io", "load", 0.0, 0.1)], []))
    assert y_labels(fig) == ["rank 0", "rank 1"]
    render(fig)


def test_timeline_draws_into_a_given_axes_without_resizing_it():
    owner = Figure(figsize=(5, 3))
    ax = owner.add_subplot()
    fig = plot.timeline(barrier_arrivals([0.0, 0.1], leave=0.2), ax=ax, title="mine")
    assert fig is owner and owner.get_size_inches().tolist() == [5, 3]
    assert ax.get_title() == "mine"


def test_timeline_figure_renders_itself_for_jupyter():
    fig = plot.timeline(barrier_arrivals([0.0, 0.1], leave=0.2))
    assert fig._repr_png_().startswith(b"\x89PNG")


def test_importing_barrierlab_plot_does_not_import_pyplot():
    code = "import sys, barrierlab, barrierlab.plot; print('matplotlib.pyplot' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# --- what the figure says ----------------------------------------------------------------------------


def legend_labels(fig: Figure) -> list[str]:
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def right_notes(fig: Figure, panel: int = 0) -> list[str]:
    (right,) = [c for c in fig.axes[panel].child_axes]
    return [t.get_text() for t in right.get_yticklabels()]


def ddp_like() -> list[list[Event]]:
    """Two ranks, two steps: forward, a backward span that holds DDP's (unrecorded) wait, a tiny recorded
    all_reduce inside it (the comm hook's async call), optimizer."""
    lanes = []
    for r in range(2):
        items, t = [], 0.0
        for k in range(2):
            fwd = 0.2 if r == 1 else 0.01
            items += [
                span("compute", f"forward {k}", t, t + fwd),
                span("other", f"backward {k}", t + fwd, t + 0.25),
                call("all_reduce", t + 0.22, t + 0.2205),
                span("compute", f"optimizer {k}", t + 0.25, t + 0.26),
            ]
            t += 0.27
        lanes.append(items)
    return ranks(*lanes)


def test_legend_names_the_spans_never_other():
    labels = legend_labels(plot.timeline(ddp_like()))
    assert "forward, optimizer (compute span)" in labels
    assert "backward (span)" in labels
    assert not any(label.startswith("other") for label in labels)
    assert "waiting in a collective: all_reduce" in labels


def test_legend_names_a_timed_span_and_the_collectives_waited_in():
    lanes = ranks(*([span("other", "timed", 0.0, 0.3), call("all_reduce", 0.1 * r, 0.3)] for r in range(3)))
    labels = legend_labels(plot.timeline(lanes))
    assert "timed (span)" in labels and "waiting in a collective: all_reduce" in labels


def test_release_legend_explains_the_numbering():
    labels = legend_labels(plot.timeline(barrier_arrivals([0.0, 0.2], leave=0.21)))
    assert any("#k" in label and "k-th collective" in label for label in labels)


def test_an_unrecorded_wait_is_not_reported_as_a_tiny_wait():
    fig = plot.timeline(ddp_like(), waits_inside={"backward": "DDP waits for its all_reduce in C++"})
    notes = right_notes(fig)
    assert all(note.startswith("its wait inside backward was not recorded") for note in notes)
    assert not any(note.startswith("waited") for note in notes)
    assert any("DDP waits for its all_reduce in C++" in label for label in legend_labels(fig))
    plain = right_notes(plot.timeline(ddp_like()))
    assert all(note.startswith("waited 0.001 s") for note in plain)  # what it would say without the option


def test_a_rank_without_collectives_says_so_rather_than_waited_zero():
    lanes = ranks([span("io", "download", 0.0, 1.0)], [span("io", "read", 0.0, 0.1)])
    assert right_notes(plot.timeline(lanes)) == ["entered no collective", "entered no collective"]


def test_a_span_that_raised_is_marked_and_named():
    lanes = ranks(
        [span("io", "download", 0.0, 1.0)],
        [span("io", "read", 0.0, 0.001, error=FileNotFoundError(2, "No such file"))],
    )
    fig = plot.timeline(lanes)
    (marks,) = artists(fig, "errors")
    assert marks.get_offsets().tolist() == [[0.001, 1.0]]
    assert "read raised FileNotFoundError" in texts(fig)


def test_an_error_label_with_no_room_right_of_its_mark_is_written_left_of_it():
    lanes = ranks(
        [span("io", "write shard", 0.0, 0.99, error=FileNotFoundError(2, "No such file"))],
        [span("io", "write shard", 0.0, 1.0)],
    )
    fig = plot.timeline(lanes)
    (label,) = [t for t in fig.axes[0].texts if t.get_text() == "write shard raised FileNotFoundError"]
    assert label.get_horizontalalignment() == "right" and label.get_position()[0] < 0.99


def test_waits_inside_rejects_a_bare_string():
    with pytest.raises(TypeError, match="waits_inside"):
        plot.timeline(ddp_like(), waits_inside="backward")


def test_compare_timelines_shares_the_axis_and_merges_the_legend():
    before = ranks([span("io", "download", 0.0, 1.0)], [span("io", "setup", 0.0, 0.1)])
    after = steps([0], world=2)
    fig = plot.compare_timelines({"before": before, "after": after}, waits_inside=["backward"])
    top, bottom = fig.axes[0], fig.axes[1]
    assert top.get_xlim() == bottom.get_xlim()
    labels = legend_labels(fig)
    assert len(labels) == len(set(labels))
    assert [label for label in labels if "span" in label and "compute" in label] == ["compute (compute span)"]
    assert "download, setup (input/output span)" in labels
    with pytest.raises(TypeError, match="title"):
        plot.compare_timelines({"a": before}, title="x")
    with pytest.raises(ValueError, match="runs"):
        plot.compare_timelines({})


def test_work_name_drops_step_numbers():
    assert [waits.work_name(n) for n in ("forward 2", "no_sync, step 0", "wait(barrier#3)", "1 setup", "timed")] == [
        "forward",
        "no_sync, step",
        "Work.wait()",
        "1 setup",
        "timed",
    ]


# --- a real run ----------------------------------------------------------------------------------------


def staggered() -> int:
    import torch.distributed as dist

    rank = dist.get_rank()
    time.sleep(0.1 * rank)
    dist.barrier()
    return rank


def test_real_run_finds_the_last_rank_to_arrive():
    import barrierlab

    run = barrierlab.run(staggered, 4, check=True)
    numbers = run.waits()
    assert numbers == waits.measure(run)
    assert numbers.last_to_arrive == 3 and numbers.straggler is None  # one barrier: no pattern yet
    ranks = numbers.ranks
    assert all(ranks[r].idle_fraction > ranks[3].idle_fraction for r in (0, 1, 2))
    summary = run.summary()
    assert isinstance(summary, str) and "\n" not in summary
    assert summary.startswith(run.headline()) and "rank 3 was last to arrive: the others waited for it" in summary
    assert all(ranks[r].collectives == 1 for r in range(4))
    fig = plot.timeline(run)
    assert y_labels(fig)[3] == "rank 3 (last to arrive)"
    assert len(artists(fig, "releases")[0].get_segments()) == 1


def one_rank_never_arrives():
    import torch.distributed as dist

    rank = dist.get_rank()
    dist.barrier()
    dist.barrier()
    if rank == 0:
        dist.barrier()  # rank 1 never calls it
    else:
        time.sleep(60)


def test_a_rank_that_never_reached_the_call_the_others_were_in_never_arrived():
    """review56 M2: in a stuck run the rank the others waited for was called "last to arrive" although it never
    arrived at the barrier rank 0 spent most of the run in."""
    import barrierlab

    run = barrierlab.run(one_rank_never_arrives, 2, timeout=30, deadline=4)
    numbers = run.waits()
    assert numbers.last_to_arrive == 1 and numbers.never_arrived == "barrier #3"
    assert "rank 1 never arrived at barrier #3: the others waited for it" in numbers.summary()
    assert "last to arrive" not in numbers.summary() + numbers.table()
    assert "<- never arrived at barrier #3: the others waited for it" in numbers.table()
    assert y_labels(plot.timeline(run))[1].startswith("rank 1 (never arrived at barrier #3")


def barrier_then_work():
    import torch.distributed as dist

    dist.barrier()
    time.sleep(0.3)


def test_a_learners_xlim_past_the_release_labels_keeps_the_layout():
    """Release labels and never-left marks hang over the axes' edge (clip_on=False); notebook 02 cut its axis
    at the first rank's start with set_xlim, a label fell far outside, and constrained layout collapsed the
    axes ("axes sizes collapsed to zero", a warning nbval saw as unexpected stderr)."""
    import warnings

    import barrierlab

    run = barrierlab.run(barrier_then_work, 2, check=True)
    fig = plot.timeline(run)
    release = min(e.end for r in run for e in r.events if e.name == "barrier")
    fig.axes[0].set_xlim(release + 0.1, run.elapsed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        render(fig)
    assert fig.axes[0].get_position().width > 0.3


def test_labels_of_nested_waits_on_one_lane_do_not_overlap():
    """async_barrier's wait spans hold the recorded Work.wait calls: one label per place, never two on top."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    import barrierlab
    from barrierlab.scenarios import async_barrier

    run = barrierlab.run(async_barrier.scenario, 4, check=True)
    # a close-up of the waits: whether a 0.1 s span's name fits depends on the seconds the figure shows, and on a
    # loaded CI the whole run was long enough that only "Work.wait" fitted in the wait(timeout) spans
    spans = [e for r in run if r.rank < 3 for e in r.events if e.name == "wait(timeout)"]
    fig = plot.timeline(run, since=min(e.start for e in spans) - 0.1, until=max(e.end for e in spans) + 0.3)
    renderer = FigureCanvasAgg(fig).get_renderer()
    labels = [(t.get_position()[1], t.get_window_extent(renderer)) for t in fig.axes[0].texts]
    assert not [(a, b) for i, (y, a) in enumerate(labels) for z, b in labels[i + 1 :] if y == z and a.overlaps(b)], (
        "two labels overlap on one lane"
    )
    # ranks 0-2 name the timed-out wait, as the notebook says (with room, "wait(timeout) failed")
    assert len([t for t in texts(fig) if t.startswith("wait(timeout)")]) == 3, texts(fig)


def share_a_file(folder: str, fixed: bool) -> int:
    """Rank 0 writes a file the others read after a sleep (a race), or after a barrier (the fix)."""
    import os

    import torch.distributed as dist

    path = os.path.join(folder, "vocab.txt")
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            f.write("a b c")
    else:
        time.sleep(0.2)
    if fixed:
        dist.barrier()
    with open(path) as f:
        return len(f.read().split())


def lines(fig: Figure, gid: str) -> list:
    return [line for line in fig.axes[0].lines if line.get_gid() == gid]


def test_handoffs_draws_the_barrier_that_orders_each_read_after_the_write(tmp_path):
    import barrierlab

    run = barrierlab.run(share_a_file, 3, args=(str(tmp_path), True), check=True)
    fig = plot.timeline(run, handoffs=True)
    edges = artists(fig, "handoff-edge")
    # rank 0's write, along its lane to the barrier; from rank 0's entry to ranks 1 and 2 leaving it
    assert len(edges) == 2 and {round(e.xy[1] + 0.25) for e in edges} == {1, 2}, [e.xy for e in edges]
    assert lines(fig, "handoff-chain") and not lines(fig, "race")
    assert any("what orders a file handoff (2 drawn" in label for label in legend_labels(fig))
    render(fig)


def test_handoffs_marks_each_race_of_a_run_that_succeeded(tmp_path):
    import barrierlab

    run = barrierlab.run(share_a_file, 3, args=(str(tmp_path), False), check=True)
    fig = plot.timeline(run, handoffs=True)
    assert len(lines(fig, "race")) == 2 and not artists(fig, "handoff-edge")
    assert texts(fig).count("race: vocab.txt") == 2
    assert any(label.startswith("race (2)") for label in legend_labels(fig))
    assert "raced" in run.diagnosis.headline and run.diagnosis.ok  # finished, but by timing: the diagnosis says it
    assert "rank 1 read `vocab.txt`" in str(run.diagnosis)


def test_handoffs_needs_a_run():
    with pytest.raises(ValueError, match="handoffs=True needs a Run"):
        plot.timeline(barrier_arrivals([0.0, 0.1], 0.2), handoffs=True)
    with pytest.raises(TypeError, match="handoffs must be a bool"):
        plot.timeline(barrier_arrivals([0.0, 0.1], 0.2), handoffs="yes")


def test_a_long_legend_label_gets_fewer_columns():
    ops = ["gather_object", "scatter_object_list", "broadcast_object_list", "all_gather_object"]
    lanes = ranks(*([call(op, 0.1 * k + 0.01 * r, 0.1 * k + 0.05) for k, op in enumerate(ops)] for r in range(2)))
    fig = plot.timeline(lanes)
    assert fig.legends[0]._ncols < 3
    assert plot.timeline(barrier_arrivals([0.0, 0.1], leave=0.2)).legends[0]._ncols == 3


def test_an_async_collective_in_flight_is_drawn_but_not_counted_as_waiting():
    lanes = ranks(
        *(
            [call("barrier", 0.1 * r, 0.1 * r + 0.001, done=0.3), span("compute", "other work", 0.1 * r + 0.001, 0.5)]
            for r in range(2)
        )
    )
    fig = plot.timeline(lanes)
    (bars,) = artists(fig, "in-flight")
    assert len(bars.get_paths()) == 2
    assert any("in flight" in label for label in legend_labels(fig))
    assert waits.measure(lanes).ranks[0].wait < 0.01


def test_an_in_flight_bar_ends_where_the_work_completed_when_the_axis_starts_at_the_function():
    """A Run's axis starts when the first rank's function started (0.2 s here); the async barrier returned at
    0.3 s and completed at 0.6 s, so its bar runs from 0.1 s to 0.4 s on the drawn axis, inside the axes."""
    from barrierlab._protocol import Status
    from barrierlab.result import RankResult, Run

    results = []
    for r in range(2):
        (events,) = ranks([call("barrier", 0.3, 0.301, done=0.6), span("compute", "other work", 0.301, 0.9)])
        results.append(RankResult(r, Status.FINISHED, started=0.2, ended=1.0, events=events))
    fig = plot.timeline(Run(world_size=2, ranks=results, elapsed=1.0, timeout=5.0, deadline=10.0))
    (bars,) = artists(fig, "in-flight")
    for path in bars.get_paths():
        xs = path.vertices[:, 0]
        assert xs.min() == pytest.approx(0.101) and xs.max() == pytest.approx(0.4)
    assert xs.max() < fig.axes[0].get_xlim()[1]


# --- collectives torch issued itself (flight recorder) -------------------------------------------------


def finished_run(*records) -> Run:
    """A run whose ranks (records read back with the one reader) all finished within 1 s."""
    results = [
        RankResult(r, Status.FINISHED, started=0.0, ended=1.0, events=rec.events, flight=rec.flight)
        for r, rec in enumerate(records)
    ]
    return Run(world_size=len(results), ranks=results, elapsed=1.0, timeout=5.0, deadline=10.0)


def ddp_run(*, async_barrier: bool = False):
    """A 2-rank run as DDP leaves it: DDP's construction broadcast (#1) and a gradient all_reduce (#2), issued
    by torch and listed only by its flight recorder, then the learner's barrier (#3, the learner's call number
    1); written by the recorder's writer and read back."""
    records = []
    for r in range(2):
        late = 0.3 * r
        if async_barrier:
            barrier = call("barrier", 0.6 + late, 0.6 + late, done=0.95)
        else:
            barrier = call("barrier", 0.6 + late, 0.901)
        flight = [
            issued("broadcast", 0.05, by=DDP_BROADCAST),
            issued("all_reduce", 0.3 + late, by=BACKWARD),
            issued("barrier", 0.6 + late),
        ]
        records.append(rank_record(r, [span("other", "backward 0", 0.2, 0.5 + late), barrier], flight))
    return finished_run(*records)


def test_collectives_torch_issued_are_ticks_labelled_with_their_issuer():
    fig = plot.timeline(ddp_run())
    (ticks,) = artists(fig, "torch-calls")
    starts = sorted(round(float(seg[0][0]), 3) for seg in ticks.get_segments())
    assert starts == [0.05, 0.05, 0.3, 0.6]  # two ranks' broadcast and all_reduce, where torch issued them
    labels = [t.get_text() for t in artists(fig, "torch-call-label")]
    assert labels.count("DDP broadcast #1") == 2 and {"DDP all_reduce #2"} <= set(labels)
    (legend,) = [label for label in legend_labels(fig) if label.startswith("collective torch issued itself")]
    assert "gloo records no end" in legend and "DDP broadcast" in legend and "DDP all_reduce" in legend
    assert len(artists(fig, "wait:collective")) == 1  # only the learner's barrier has a bar


def test_collectives_are_numbered_as_in_the_ledger():
    run = ddp_run()
    assert [r.seq for r in waits.measure(run).releases] == [3]
    assert any(line.startswith("3  barrier") for line in run.ledger().splitlines())
    fig = plot.timeline(run)
    assert "barrier #3" in texts(fig) and "barrier #1" not in texts(fig)
    assert any("the default group's k-th collective" in label for label in legend_labels(fig))


def test_calls_close_together_share_one_label():
    flight = [issued("broadcast", 0.5 + 0.001 * k, by=DDP_BROADCAST, seq=k) for k in (5, 6, 7)]
    fig = plot.timeline(finished_run(rank_record(0, [span("compute", "work", 0.0, 1.0)], flight)))
    assert [t.get_text() for t in artists(fig, "torch-call-label")] == ["DDP #5–7"]


def test_torch_calls_say_their_waits_were_not_recorded():
    notes = right_notes(plot.timeline(ddp_run()))
    assert all(note.startswith("waited") and "waits in torch's own collectives not recorded" in note for note in notes)
    hidden = right_notes(plot.timeline(ddp_run(), waits_inside={"backward": "DDP waits for its all_reduce"}))
    assert all(note.startswith("its wait inside backward was not recorded") for note in hidden)


def test_an_async_call_keeps_its_in_flight_bar_and_its_ledger_number():
    fig = plot.timeline(ddp_run(async_barrier=True))
    (bars,) = artists(fig, "in-flight")
    assert len(bars.get_paths()) == 2
    assert "barrier #3" in texts(fig)
    assert waits.measure(ddp_run(async_barrier=True)).ranks[0].wait < 0.01


def test_issuer_word_names_who_issued_a_call():
    assert [
        issuer_word(i)
        for i in (
            "DDP backward's gradient all_reduce",
            "Join's all_reduce (shadowing)",
            "a functional all_reduce (DTensor / torch.compile)",
            "torch.distributed's broadcast (inside broadcast_object_list)",
            "DCP's gather (checkpoint save/load)",
        )
    ] == ["DDP", "Join", "functional", "torch.distributed", "DCP"]


def ddp_two_steps() -> int:
    import torch
    import torch.distributed as dist

    from barrierlab import span

    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    for k in range(2):
        with span(f"backward {k}"):
            model(torch.ones(3, 4)).sum().backward()
    dist.barrier()
    return dist.get_rank()


@pytest.mark.slow
def test_a_real_ddp_run_shows_the_all_reduces_torch_issued():
    import barrierlab

    run = barrierlab.run(ddp_two_steps, 2, check=True, timeout=30)
    rows = [line.split() for line in run.ledger().splitlines()[1:] if line[:1].isdigit()]
    barrier_at = next(int(row[0]) for row in rows if row[1] == "barrier")
    assert barrier_at > 1  # DDP's own collectives came first
    fig = plot.timeline(run)
    (ticks,) = artists(fig, "torch-calls")
    assert len(ticks.get_segments()) == 2 * (barrier_at - 1)  # every collective before the barrier is DDP's
    assert f"barrier #{barrier_at}" in texts(fig)
    assert any("DDP all_reduce" in label for label in legend_labels(fig))


def test_a_broadcast_gets_no_release_line_its_root_can_leave_before_the_last_rank_arrives():
    lanes = ranks(
        [call("broadcast", 0.0, 0.001), call("barrier", 0.4, 0.5)],
        [call("broadcast", 0.3, 0.301), call("barrier", 0.5, 0.501)],
    )
    fig = plot.timeline(lanes)
    (lines,) = artists(fig, "releases")
    assert [round(float(seg[0][0]), 3) for seg in lines.get_segments()] == [0.5]
    assert "barrier #2" in texts(fig) and "broadcast #1" not in texts(fig)


def test_waits_inside_several_spans_keep_the_note_short():
    lanes = ranks(
        *([span("other", "sync, step 0", 0.0, 0.2), span("compute", "no_sync, step 0", 0.2, 0.4)] for r in range(2))
    )
    notes = right_notes(plot.timeline(lanes, waits_inside={"sync, step": "a", "no_sync, step": "b"}))
    assert notes == ["its waits inside 2 spans (legend) were not recorded"] * 2


def test_since_leaves_out_the_torch_calls_before_it_from_picture_and_legend():
    fig = plot.timeline(ddp_run(), since=0.2)
    (ticks,) = artists(fig, "torch-calls")
    assert len(ticks.get_segments()) == 2  # the all_reduces; the broadcasts at 0.05 are left of the axis
    (legend,) = [label for label in legend_labels(fig) if label.startswith("collective torch issued itself")]
    assert "DDP all_reduce" in legend and "DDP broadcast" not in legend


def test_until_ends_the_axis_early_and_keeps_the_whole_runs_notes():
    """A close-up of one step (review22b: 06's no_sync figure drew its step in the left 4 % of the axis)."""
    events = hand_made()
    whole = plot.timeline(events)
    close = plot.timeline(events, since=0.05, until=0.3)
    assert close.axes[0].get_xlim() == pytest.approx((0.05, 0.3))
    assert right_notes(close) == right_notes(whole)
    for bad, message in ((float("nan"), "until must be a finite number"), (0.01, "must be later than since")):
        with pytest.raises(ValueError, match=message):
            plot.timeline(events, since=0.05, until=bad)


FIRST_RUN = """
import json, re, time
import barrierlab as bl
from barrierlab import plot


def staggered():
    import torch.distributed as dist

    time.sleep(0.1 * dist.get_rank())
    dist.barrier()


run = bl.run(staggered, 2, check=True)
fig = plot.timeline(run)
ax = fig.axes[0]
print(json.dumps({
    "xlabel": ax.get_xlabel(),
    "title": ax.get_title(),
    "elapsed": run.elapsed,
    "ranks_start": min(r.started for r in run),
    "xlim": ax.get_xlim(),
}))
"""


@pytest.mark.slow
def test_the_first_timeline_of_a_fresh_interpreter_starts_when_the_ranks_start():
    """The first run waits for the warm process to import torch; that wait is not drawn, and the title's time
    is the ranks' time (the run's elapsed time minus the wait)."""
    done = subprocess.run([sys.executable, "-c", FIRST_RUN], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["xlabel"] == "seconds since the ranks started"
    took = float(re.search(r"\(([\d.]+) s\)", seen["title"])[1])
    assert took == pytest.approx(seen["elapsed"] - seen["ranks_start"], abs=0.006)
    assert seen["xlim"][0] == 0  # the first rank's function starts the axis
    assert seen["xlim"][1] == pytest.approx((seen["elapsed"] - seen["ranks_start"]) * 1.02, rel=1e-6)


def span_named_like_shell_variables():
    import torch.distributed as dist

    import barrierlab as bl

    with bl.span(r"copy $HOME\data to $SCRATCH"):
        time.sleep(0.05)
    dist.barrier()


def test_span_names_with_dollar_signs_are_drawn_as_written():
    """attack10 a13: two dollar signs made matplotlib parse a span name as math, and '\\data' is no TeX: the
    timeline of a run that worked raised ValueError when saved."""
    import barrierlab as bl

    run = bl.run(span_named_like_shell_variables, 2, deadline=60)
    assert run.ok, run
    fig = run.timeline()
    render(fig)
    assert any(r"copy $HOME\data to $SCRATCH" in t for t in texts(fig)), texts(fig)
    render(plot.compare_timelines({"one": run, "two": run}))


def span_named_after_a_file_whose_name_is_not_utf8():
    import torch.distributed as dist

    import barrierlab as bl

    name = b"donn\xe9es.txt".decode("utf-8", "surrogateescape")  # os.fsdecode's name for it on a UTF-8 system
    with bl.span(f"load {name}"):
        time.sleep(0.5)  # long enough for its name to fit in its bar, however slow the start
    dist.barrier()


def test_a_span_named_after_a_file_whose_name_is_not_utf8_is_drawn_escaped():
    """attack11 a24: matplotlib cannot draw a lone surrogate (TypeError from set_text), so the timeline of a run
    that worked could not be drawn; the name is drawn as repr shows it."""
    import barrierlab as bl

    run = bl.run(span_named_after_a_file_whose_name_is_not_utf8, 2, deadline=60)
    assert run.ok, run
    fig = run.timeline()
    render(fig)
    assert {e.name for e in run.events if e.kind == "compute"} == {"load donn\\udce9es.txt"}
    assert any("load donn\\udce9es.txt" in t for t in texts(fig)), texts(fig)


def test_a_work_wait_is_one_legend_entry_whatever_name_the_recorder_gave_it():
    # review53b: notebook 05 §8's legend read "waiting: Work.wait(), Work.wait" (an async barrier's
    # wait(barrier#k) span and the recorder's Work.wait call)
    import barrierlab as bl
    from barrierlab.scenarios import overlap_async_barrier

    run = bl.run(overlap_async_barrier.scenario, 2, kwargs=dict(overlap=True), timeout=10)
    assert run.ok, run
    names = {e.name for r in run.ranks for e in r.events if e.kind == "wait"}
    fig = run.timeline()
    legend = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    legend += [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    waiting = [text for text in legend if "Work.wait" in text]
    assert waiting and all(text.count("Work.wait") == 1 for text in waiting), (legend, names)


def test_a_timeline_of_cut_records_says_their_middle_was_not_drawn():
    # attack27 a10: the dropped middle of 9,000 barriers was drawn as plain running, with nothing said
    import barrierlab as bl

    def many(n):
        import torch.distributed as dist

        for _ in range(n):
            dist.barrier()

    run = bl.run(many, 2, args=(6000,), timeout=30, deadline=90, live=False)
    assert run.ok and run.events_dropped, run
    title = run.timeline().axes[0].get_title()
    assert "the middle of the records of ranks 0, 1 was not read" in title, title
    assert "rank 0" not in run.timeline(title="mine").axes[0].get_title()


def waits_for_a_late_rank_with_a_timeout():
    """review61a: notebook 00 §4's `wait(timeout)` that raised, then a second `wait()`."""
    import datetime

    import torch.distributed as dist

    if dist.get_rank() == 1:
        time.sleep(0.6)
    work = dist.barrier(async_op=True)
    try:
        work.wait(timeout=datetime.timedelta(seconds=0.2))
    except RuntimeError:
        pass
    work.wait()


def test_the_title_names_the_call_the_ranks_left_with_an_error():
    import barrierlab as bl

    run = bl.run(waits_for_a_late_rank_with_a_timeout, 2)
    assert run.ok, run
    title = run.timeline().axes[0].get_title()
    assert "rank 0 left Work.wait with an error" in title, title


def _subgroup_then_barrier():
    group = dist.new_group([0, 1])
    if dist.get_rank() in (0, 1):
        dist.barrier(group=group)
    time.sleep(0.05 * dist.get_rank())
    dist.barrier()


def test_the_release_legend_says_the_numbers_leave_group_makers_and_subgroup_calls_out():
    """run.ledger() numbers a rank's collectives on the default group, without its new_group calls and a
    subgroup's collectives: the default barrier after both is #1, and the legend says what #k counts (it said
    "each rank's k-th collective", which a rank's third call is not called here)."""
    run = bl.run(_subgroup_then_barrier, 3, timeout=20, deadline=60).raise_if_failed()
    fig = plot.timeline(run)
    assert "barrier #1" in texts(fig), texts(fig)
    (legend,) = [label for label in legend_labels(fig) if label.startswith("op #k")]
    assert "on the default group, as in run.ledger()" in legend or "default group's k-th" in legend, legend
