"""Bounded collection: whatever the ranks record, run() returns soon after the deadline with a bounded
amount of memory, keeping the head and tail of each rank's events and saying how many were dropped."""

from __future__ import annotations

import json
import time

import psutil
import pytest

import barrierlab as bl
from barrierlab import record, result

pytestmark = pytest.mark.usefixtures("no_leftovers")


def write_events(path, n_events):
    with open(path, "w") as f:
        f.write(json.dumps({"meta": "start", "rank": 0, "t0": 0.0, "pid": 1, "wall": 0.0}) + "\n")
        for i in range(1, n_events + 1):
            f.write(f'{{"id":{i},"kind":"compute","name":"x","t":{i}.0}}\n{{"id":{i},"end":{i}.5}}\n')


def test_a_long_events_file_keeps_head_and_tail_and_counts_the_middle(tmp_path):
    path = str(tmp_path / "rank0.events")
    write_events(path, 10_000)  # 20,001 lines
    events, dropped = record.read_events_kept(path, keep=1000)
    starts = [e.start for e in events]
    # the head: the meta line and 999 lines (events 1-499, and the start of event 500); the tail: the last
    # 1,000 lines (events 9,501-10,000); the middle: 9,000 events, counted
    assert starts == [float(i) for i in [*range(1, 501), *range(9501, 10_001)]]
    assert events[499].end is None and all(e.end == e.start + 0.5 for e in events if e.start != 500.0)
    assert dropped.events == 9_000 and not dropped.estimated
    assert str(dropped) == f"{dropped.events:,}"
    assert record.read_events(path) == record.read_events_kept(path)[0]  # the default cap is the same path


def test_a_short_events_file_is_read_whole(tmp_path):
    path = str(tmp_path / "rank0.events")
    write_events(path, 100)
    events, dropped = record.read_events_kept(path, keep=1000)
    assert len(events) == 100 and not dropped and str(dropped) == "0"


def flood():
    while True:
        with bl.span("x"):
            pass


@pytest.mark.timeout(120)
def test_a_span_flood_returns_within_the_deadline_and_bounded_memory():
    bl.run(flood, 1, timeout=2, deadline=0.5)  # warm every import collection uses
    kernel = psutil.Process()
    before = kernel.memory_info().rss
    deadline = 4.0
    started = time.monotonic()
    run = bl.run(flood, 2, timeout=5, deadline=deadline)
    elapsed = time.monotonic() - started
    grown = kernel.memory_info().rss - before
    assert elapsed < deadline + 3.0, elapsed  # the target is +1 s; +3 s allows for a loaded machine
    assert grown < 100 * 2**20, grown
    assert set(run.events_dropped) == {0, 1}
    assert all(d.events > 10_000 for d in run.events_dropped.values())
    keep = max(500, result.EVENT_LINES_PER_RUN // 4)
    assert all(len(r.events) <= keep + 1 for r in run.ranks)  # each event takes two lines
    assert "events not kept" in repr(run) and "rank 1:" in run.dropped_note()
    assert "events not kept" in run._repr_html_()
    assert run.statuses == [bl.Status.STOPPED] * 2


def test_a_huge_middle_is_estimated_and_says_so(tmp_path, monkeypatch):
    path = str(tmp_path / "rank0.events")
    write_events(path, 10_000)
    monkeypatch.setattr(record, "_MIDDLE_COUNTED", 1000)  # as if the middle were gigabytes
    monkeypatch.setattr(record, "_cache", None)
    _, dropped = record.read_events_kept(path, keep=1000)
    assert dropped.estimated and 8_000 < dropped.events < 10_000  # 9,000 really
    assert str(dropped).startswith("about ")
