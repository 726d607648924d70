"""The live view: reading rank event files incrementally and bounded, describing each rank, choosing where
to show (never in nbval/nbclient runs), on event files written by the recorder itself; no processes."""

from __future__ import annotations

import time

import pytest

from barrierlab import events as event_files
from barrierlab import live, palette, plot, record


def _recorder(path, rank: int = 0):
    """The recorder's own writer on ``path`` (what a rank's recorder writes, without a process group)."""
    return record._Recorder(str(path), rank, time.monotonic())


def test_a_rank_inside_a_barrier_is_described_as_waiting_with_its_number_time_and_line(tmp_path) -> None:
    path = tmp_path / "rank1.events"
    writer = _recorder(path, 1)
    writer.leave(writer.enter("collective", "barrier", True, None))
    writer.enter("collective", "barrier", True, ("x.py", 4, "f"))
    state = live.RankLive(1)
    live.EventTail(str(path), launch_t0=writer_t0(path)).poll(state)
    now = time.monotonic() - writer_t0(path) + 2.0
    text = live.describe(state, now=now, where=lambda site: f"{site[0]}, line {site[1]}")
    assert text.startswith("waiting in barrier #2 since 2.") and text.endswith(" — x.py, line 4")
    assert [kind for kind, _, _ in state.done] == ["collective"]


def poll_until_open(tail, state, name: str) -> None:
    """Read the file until the event ``name`` is open in ``state``: a span's entry line is written behind, within
    ``record.WRITE_EVERY`` (by the recorder's helper thread while this one sleeps)."""
    give_up = time.monotonic() + 10
    tail.poll(state)
    while name not in [o.name for o in state.open.values()] and time.monotonic() < give_up:
        time.sleep(record.WRITE_EVERY / 4)
        tail.poll(state)


def writer_t0(path) -> float:
    return event_files.read_meta(str(path))["t0"]


def test_a_rank_inside_a_span_is_described_as_working_and_the_status_line_says_so(tmp_path) -> None:
    spans, barrier = tmp_path / "rank0.events", tmp_path / "rank1.events"
    record.start(str(spans), 0)
    try:
        with record.span("crunch"):
            _recorder(barrier, 1).enter("collective", "barrier", True, None)
            states = [live.RankLive(0), live.RankLive(1)]
            live.EventTail(str(barrier), writer_t0(spans)).poll(states[1])
            poll_until_open(live.EventTail(str(spans), writer_t0(spans)), states[0], "crunch")
    finally:
        record.stop()
    assert live.describe(states[0], now=1.0).startswith("working in span 'crunch' since ")
    assert live.describe(states[1], now=1.0).startswith("waiting in barrier #1 since ")
    line = live.render_line(states, now=1.0, deadline=5.0)
    assert line.endswith("· working: rank 0 · waiting: rank 1"), line


def test_lanes_colour_each_kind_as_the_timeline_does(tmp_path) -> None:
    path = tmp_path / "rank0.events"
    record.start(str(path), 0)
    try:
        with record.span("load", kind="io"):
            pass
        with record.span("crunch"):
            state = live.RankLive(0)
            poll_until_open(live.EventTail(str(path), writer_t0(path)), state, "crunch")
    finally:
        record.stop()
    svg = live.lane_svg(state, now=1.0, horizon=2.0)
    assert palette.KIND["io"] in svg and palette.KIND["compute"] in svg
    assert plot.SPAN_STYLES["io"][1] == palette.KIND["io"] and plot.WAIT_STYLES["p2p"][1] == palette.KIND["p2p"]


def test_lines_written_in_two_halves_are_read_once_whole(tmp_path) -> None:
    whole, path = tmp_path / "whole.events", tmp_path / "rank0.events"
    _recorder(whole).enter("collective", "all_reduce", True, None)
    meta, line = whole.read_bytes().splitlines(keepends=True)
    tail, state = live.EventTail(str(path), 0.0), live.RankLive(0)
    path.write_bytes(meta + line[:10])
    tail.poll(state)
    assert not state.open
    with open(path, "ab") as f:
        f.write(line[10:])
    tail.poll(state)
    assert [o.name for o in state.open.values()] == ["all_reduce"]


def test_a_flooded_event_file_is_skipped_ahead_within_the_read_budget(tmp_path) -> None:
    path = tmp_path / "rank0.events"
    record.start(str(path), 0)
    try:
        for _ in range(40_000):
            with record.span("step"):
                pass
    finally:
        record.stop()
    state = live.RankLive(0)
    tail = live.EventTail(str(path), 0.0)
    tail.poll(state, budget=4096)
    assert state.skipped_bytes > 0
    assert tail.tail.offset <= path.stat().st_size
    assert len(state.done) <= live.LANE_KEEP


def test_ended_ranks_and_ranks_without_events_are_described_plainly() -> None:
    assert live.describe(live.RankLive(0, ended="raised RuntimeError"), 1.0) == "raised RuntimeError"
    assert live.describe(live.RankLive(0), 1.0) == "starting"
    assert live.describe(live.RankLive(0, phase="joining"), 1.0) == "waiting for the other ranks to join the group"
    assert live.describe(live.RankLive(0, phase="called"), 1.0) == "running your code"
    assert live.describe(live.RankLive(0, recorded=False), 1.0).startswith("not recorded (record=False)")
    assert live.describe(live.RankLive(0, recorded=False, ended="finished"), 1.0) == "finished"


def test_the_view_follows_the_start_up_phases_the_recorder_writes(tmp_path) -> None:
    from barrierlab import events

    path = tmp_path / "events.jsonl"
    state, seen = live.RankLive(0), []
    record.start(str(path), 0)
    try:
        tail = live.EventTail(str(path), 0.0)
        # a rank whose record has only its start line is still in barrierlab's start-up (loading its call, joining
        # the group): not yet running the learner's code (attack26 a22)
        tail.poll(state)
        seen.append(live.describe(state, 1.0))
        for step in ("joining", "called"):
            record.phase(step)
            tail.poll(state)
            seen.append(live.describe(state, 1.0))
    finally:
        record.stop()
    assert seen == ["starting", "waiting for the other ranks to join the group", "running your code"]
    assert events.read_record(str(path)).malformed == 0
    with pytest.raises(ValueError, match="phase"):
        record.phase("running")


def test_the_html_view_names_every_rank_and_the_time_left() -> None:
    states = [live.RankLive(0, ended="finished"), live.RankLive(1, phase="called")]
    page = live.render_html(states, now=2.0, deadline=5.0)
    assert "rank 0" in page and "rank 1" in page and "deadline in 3.0 s" in page and "<svg" in page


@pytest.mark.parametrize(
    "setting,session,expected",
    [
        (None, None, "none"),  # nbval / nbclient: no Jupyter server session, nothing is stored
        (None, "nb.ipynb", "notebook"),  # JupyterLab
        (False, "nb.ipynb", "none"),
        (True, None, "notebook"),
    ],
)
def test_in_a_kernel_the_view_shows_only_with_a_front_end_or_when_asked(
    monkeypatch, setting, session, expected
) -> None:
    monkeypatch.setattr(live, "_in_kernel", lambda: True)
    monkeypatch.delenv("BARRIERLAB_LIVE", raising=False)
    if session:
        monkeypatch.setenv("JPY_SESSION_NAME", session)
    else:
        monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert live.choose(setting) == expected


def test_the_environment_variable_turns_the_view_off(monkeypatch) -> None:
    monkeypatch.setattr(live, "_in_kernel", lambda: True)
    monkeypatch.setenv("JPY_SESSION_NAME", "nb.ipynb")
    monkeypatch.setenv("BARRIERLAB_LIVE", "0")
    assert live.choose(None) == "none"


def test_a_view_that_is_off_starts_no_thread_and_closes_at_once(tmp_path) -> None:
    view = live.LiveView("none", [str(tmp_path / "rank0.events")], 0.0, 5.0, endings=dict)
    assert view._thread is None
    view.close()


def test_endings_are_read_from_exit_statuses_and_outcome_headers(tmp_path) -> None:
    import signal

    from barrierlab._protocol import Outcome, RankFiles, Status

    Outcome(rank=0, world_size=3, status=Status.FINISHED, value=b"x" * 10).write(RankFiles(str(tmp_path), 0).outcome)
    Outcome(rank=1, world_size=3, status=Status.RAISED, error_type="builtins.ValueError").write(
        RankFiles(str(tmp_path), 1).outcome
    )
    ended = live.ended_ranks(str(tmp_path), 3, {0: (0, None), 1: (0, None), 2: (None, signal.SIGKILL)})
    assert ended == {0: "finished", 1: "raised ValueError", 2: "killed by SIGKILL"}


def test_a_run_shows_the_live_view_on_a_terminal_and_erases_it(monkeypatch, capfd) -> None:
    import time

    import torch.distributed as dist

    import barrierlab as bl

    def slow():
        time.sleep(0.8)
        dist.barrier()
        return dist.get_rank()

    monkeypatch.setattr(live, "SHOW_AFTER", 0.1)
    monkeypatch.setattr(live.sys, "__stderr__", live.sys.stderr)
    run = bl.run(slow, 2, live=True, timeout=5)
    assert run.values == [0, 1]
    err = capfd.readouterr().err
    assert "barrierlab: " in err and "deadline in" in err
    assert err.rstrip(" ").endswith("\r\x1b[2K")  # erased at the end: only the result stays


def test_live_must_be_a_flag_or_none() -> None:
    import barrierlab as bl

    with pytest.raises(TypeError, match="live"):
        bl.run(print, 2, live="yes")


LIVE_CELL = """
import time
import barrierlab as bl
print("before the run")
bl.run(lambda: time.sleep(1.5), 2, live=True)
print("after the run")
"""


#: A Jupyter server configured only by the environment at argv[1] (what ``python -m barrierlab_kernel install``
#: writes there) saves the notebook JSON at argv[2] as argv[3], through its contents manager: as the lab saves.
SAVE_THROUGH_A_SERVER = """
import asyncio, inspect, json, sys
from jupyter_server.serverapp import ServerApp
prefix, source, folder = sys.argv[1:]
app = ServerApp()
app.initialize(argv=["--ServerApp.root_dir=" + folder, "--ServerApp.open_browser=False"], new_httpserver=False)
with open(source) as f:
    saved = app.contents_manager.save({"type": "notebook", "format": "json", "content": json.load(f)}, "saved.ipynb")
if inspect.isawaitable(saved):
    asyncio.run(saved)
"""


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_notebook_saved_from_the_lab_keeps_no_live_view(tmp_path):
    """A kernel shows the live view (live=True: as in the lab), nbclient keeps the outputs as the lab would; a
    Jupyter server set up by ``python -m barrierlab_kernel install`` saves exactly what the same cell leaves
    without a view."""
    import json
    import os
    import subprocess
    import sys

    import nbformat
    from nbclient import NotebookClient

    import barrierlab_kernel

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(LIVE_CELL)])
    for attempt in range(2):
        try:
            NotebookClient(notebook, timeout=200, kernel_name="python3").execute(cwd=str(tmp_path))
            break
        except RuntimeError as error:  # jupyter_client picks the kernel's ports, then the kernel binds them: another
            # process may take one between (CI: 'Address already in use', 'Kernel died before replying')
            if attempt or "Kernel died before replying" not in str(error):
                raise
    outputs = notebook.cells[0].outputs
    live = [o for o in outputs if o.get("metadata", {}).get("barrierlab") == "live view"]
    assert live, f"the view did not show: {outputs}"
    nbformat.write(notebook, tmp_path / "run.ipynb")

    prefix = tmp_path / "env"
    barrierlab_kernel.install_save_hook(str(prefix))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_PATH": str(prefix / "etc" / "jupyter"),
        **{name: str(tmp_path / name.lower()) for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR")},
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    (tmp_path / "lab").mkdir()
    saver = [
        sys.executable,
        "-c",
        SAVE_THROUGH_A_SERVER,
        str(prefix),
        str(tmp_path / "run.ipynb"),
        str(tmp_path / "lab"),
    ]
    done = subprocess.run(saver, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    kept = json.loads((tmp_path / "lab" / "saved.ipynb").read_text())["cells"][0]["outputs"]
    assert not [o for o in kept if o.get("metadata", {}).get("barrierlab")], kept
    assert [(o["output_type"], "".join(o["text"])) for o in kept] == [
        ("stream", "before the run\n"),
        ("stream", "after the run\n"),
    ]


def test_spans_never_closed_are_kept_only_up_to_a_bound(tmp_path) -> None:
    """attack10 a01/a02: a rank that opened spans and never closed them had every one kept and drawn on every
    refresh. The innermost (what the rank is doing) stays."""
    path = tmp_path / "rank0.events"
    record.start(str(path), 0)
    opened = []
    try:
        for i in range(5_000):
            span = record.span(f"open {i}")
            span.__enter__()  # never left
            opened.append(span)
    finally:
        record.stop()
    state = live.RankLive(0)
    tail = live.EventTail(str(path), 0.0)
    for _ in range(100):
        tail.poll(state)
    assert 0 < len(state.open) <= live.OPEN_KEEP
    assert "open 4999" in live.describe(state, now=1e9)
    assert live.lane_svg(state, now=1e9, horizon=1e9).count("<rect") <= live.OPEN_KEEP + live.LANE_KEEP + 1
