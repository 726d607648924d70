"""The live view: reading rank event files incrementally and bounded, describing each rank, choosing where
to show (never in nbval/nbclient runs), on hand-built event files; no processes."""

from __future__ import annotations

import json

import pytest

from barrierlab import live


def _write(path, *events) -> None:
    with open(path, "a") as f:
        for event in events:
            f.write(json.dumps(event) + "\n")


def test_a_rank_inside_a_barrier_is_described_with_its_number_time_and_line(tmp_path) -> None:
    path = tmp_path / "rank1.events"
    _write(
        path,
        {"meta": "start", "rank": 1, "t0": 100.0},
        {"id": 1, "kind": "collective", "name": "barrier", "t": 100.5, "seq": 1},
        {"id": 1, "end": 100.7},
        {
            "id": 2,
            "kind": "collective",
            "name": "barrier",
            "t": 101.0,
            "seq": 2,
            "file": "x.py",
            "line": 4,
            "func": "f",
        },
    )
    state = live.RankLive(1)
    live.EventTail(str(path), launch_t0=100.0).poll(state)
    text = live.describe(state, now=3.1, where=lambda site: f"{site[0]}, line {site[1]}")
    assert text == "in barrier #2 since 2.1 s — x.py, line 4"
    assert state.done == [("collective", 0.5, pytest.approx(0.7))]


def test_lines_written_in_two_halves_are_read_once_whole(tmp_path) -> None:
    path = tmp_path / "rank0.events"
    tail, state = live.EventTail(str(path), 0.0), live.RankLive(0)
    line = json.dumps({"id": 1, "kind": "collective", "name": "all_reduce", "t": 1.0, "seq": 1})
    path.write_text(line[:10])
    tail.poll(state)
    assert not state.open
    with open(path, "a") as f:
        f.write(line[10:] + "\n")
    tail.poll(state)
    assert [o.name for o in state.open.values()] == ["all_reduce"]


def test_a_flooded_event_file_is_skipped_ahead_within_the_read_budget(tmp_path) -> None:
    path = tmp_path / "rank0.events"
    with open(path, "w") as f:
        for i in range(1, 40001):
            f.write(json.dumps({"id": i, "kind": "span", "name": "step", "t": float(i)}) + "\n")
            f.write(json.dumps({"id": i, "end": i + 0.5}) + "\n")
    state = live.RankLive(0)
    tail = live.EventTail(str(path), 0.0)
    tail.poll(state, budget=4096)
    assert state.skipped_bytes > 0
    assert tail.offset <= path.stat().st_size
    assert len(state.done) <= live.LANE_KEEP


def test_ended_ranks_and_ranks_without_events_are_described_plainly() -> None:
    assert live.describe(live.RankLive(0, ended="raised RuntimeError"), 1.0) == "raised RuntimeError"
    assert live.describe(live.RankLive(0), 1.0) == "starting"
    assert live.describe(live.RankLive(0, t0=0.0), 1.0) == "running your code"


def test_the_html_view_names_every_rank_and_the_time_left() -> None:
    states = [live.RankLive(0, ended="finished"), live.RankLive(1, t0=0.0)]
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
