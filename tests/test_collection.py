"""Bounded collection: whatever the ranks record, run() returns soon after the deadline with a bounded
amount of memory, keeping the head and tail of each rank's events and saying how many were dropped."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest
from floods import span_flood

import barrierlab as bl
from barrierlab import collect, record
from barrierlab import events as event_files

pytestmark = pytest.mark.usefixtures("no_leftovers")


def write_events(path, n_events):
    """An events file as the recorder writes it: ``n_events`` spans named by their number."""
    record.start(path, 0)
    try:
        for i in range(1, n_events + 1):
            with record.span(str(i)):
                pass
    finally:
        record.stop()


def test_a_long_events_file_keeps_head_and_tail_and_counts_the_middle(tmp_path):
    path = str(tmp_path / "rank0.events")
    write_events(path, 10_000)  # 20,001 lines, and perhaps a copy of torch's flight record at the end
    read = event_files.read_record(path, keep=1000)
    names = [int(e.name) for e in read.events]
    # the head: the meta line and 999 lines (spans 1-499, and the start of span 500); the tail: the last
    # 1,000 lines (spans 9,501-10,000, or from 9,502 on and the flight-record line); the middle: counted
    assert names[:500] == list(range(1, 501)) and names[-499:] == list(range(9502, 10_001))
    assert names[500] in (9501, 9502) and len(names) + read.dropped.events == 10_000
    assert read.events[499].end is None and all(e.end is not None for e in read.events if e.name != "500")
    assert not read.dropped.estimated and read.malformed == 0
    assert str(read.dropped) == f"{read.dropped.events:,}"
    assert event_files.read_record(path).events == event_files.read_record(path, keep=event_files.LINES_KEPT).events


@pytest.mark.parametrize("block", [5, 8, 13])
def test_the_middle_is_counted_exactly_when_its_events_straddle_the_reading_blocks(tmp_path, monkeypatch, block):
    # the middle is read in blocks; an event's key cut in two by a block's end was once not counted (CI saw
    # 999 kept + 9,000 dropped of 10,000 when a 1 MiB block ended inside one); small blocks cut most keys
    path = str(tmp_path / "rank0.events")
    write_events(path, 300)
    monkeypatch.setattr(event_files, "_BLOCK", block)
    read = event_files.read_record(path, keep=100)
    assert not read.dropped.estimated and len(read.events) + read.dropped.events == 300


def test_a_head_read_while_the_rank_writes_gives_the_record_read_at_the_end(tmp_path):
    # the kernel reads the start of each events file while it waits for the ranks (events.Head), up to a line
    # the rank has not finished writing; what collect reads from there on must be what one read at the end gives
    whole = str(tmp_path / "whole.events")
    write_events(whole, 3_000)
    data = open(whole, "rb").read()
    path = str(tmp_path / "rank0.events")
    cut = data.index(b"\n", 40_000) - 10  # inside a line
    with open(path, "wb") as f:
        f.write(data[:cut])
    head = event_files.Head(path, 1000, event_files.BYTES_KEPT)
    while head.read_more(100):
        pass
    assert 0 < head.lines < 1000 and data[: head.offset].endswith(b"\n") and head.offset < cut
    with open(path, "ab") as f:
        f.write(data[cut:])
    early = event_files.read_record(path, keep=1000, head=head)
    late = event_files.read_record(path, keep=1000)
    assert early.events == late.events and early.dropped == late.dropped and early.malformed == late.malformed == 0


def test_a_head_read_from_a_file_since_replaced_is_not_used(tmp_path):
    path = str(tmp_path / "rank0.events")
    write_events(path, 50)
    head = event_files.Head(path, 1000, event_files.BYTES_KEPT)
    head.read_more(1000)
    other = str(tmp_path / "other.events")
    write_events(other, 20)
    os.replace(other, path)
    assert len(event_files.read_record(path, keep=1000, head=head).events) == 20


def test_a_short_events_file_is_read_whole(tmp_path):
    path = str(tmp_path / "rank0.events")
    write_events(path, 100)
    read = event_files.read_record(path, keep=1000)
    assert len(read.events) == 100 and not read.dropped and str(read.dropped) == "0"


def flood():
    while True:
        with bl.span("x"):
            pass


@pytest.mark.timeout(120)
def test_a_span_flood_returns_within_the_deadline_and_bounded_memory():
    started = time.monotonic()
    bl.run(flood, 1, timeout=2, deadline=0.5)  # warm every import collection uses
    busy = max(0.0, time.monotonic() - started - 0.5)  # what this machine adds to a flooded run now
    kernel = psutil.Process()
    before = kernel.memory_info().rss
    deadline = 4.0
    started = time.monotonic()
    run = bl.run(flood, 2, timeout=5, deadline=deadline)
    elapsed = time.monotonic() - started
    grown = kernel.memory_info().rss - before
    # the target, +1 s, is measured by benchmarks/stress.py; at load 10 this call took 7.6 and 10.3 s
    assert elapsed < deadline + 3.0 + 2 * busy, (elapsed, busy)
    assert grown < 100 * 2**20, grown
    assert set(run.events_dropped) == {0, 1}
    assert all(d.events > 10_000 for d in run.events_dropped.values())
    keep = max(500, collect.EVENT_LINES_PER_RUN // 4)
    assert all(len(r.events) <= keep + 1 for r in run.ranks)  # each event takes two lines
    assert "events not kept" in repr(run) and "rank 1:" in run.dropped_note()
    assert "events not kept" in run._repr_html_()
    assert run.statuses == [bl.Status.STOPPED] * 2


BUSY = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n    pass\n"


@pytest.mark.timeout(180)
def test_a_six_rank_span_flood_ends_within_the_margin_of_its_deadline_on_a_loaded_machine():
    # benchmarks/stress.py's worst case: 6 ranks flood their records until a 1.5 s deadline. Three busy
    # processes share this process's session (its scheduling group: the harshest load, a kernel's own busy
    # neighbours), so each CPU second it spends after the deadline costs it several seconds of wall time. Before
    # the reading after the deadline was cut (heads read while waiting, json's scanner built once, no garbage
    # collection of the kernel's heap in between), the call ended 2.1-3.3 s after the deadline here; now
    # 0.4-1.1 s. The target, +1 s, is measured by benchmarks/stress.py; the best of two calls is asserted.
    started = time.monotonic()
    bl.run(span_flood, 2, timeout=2, deadline=0.5)  # warm every import collection uses
    loaded = max(0.0, time.monotonic() - started - 0.5)  # what this machine adds to a flooded run now
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(3)]
    try:
        time.sleep(0.5)
        overshoots = []
        for _ in range(2):
            started = time.monotonic()
            run = bl.run(span_flood, 6, timeout=1, deadline=1.5)
            overshoots.append(time.monotonic() - started - 1.5)
            assert run.statuses == [bl.Status.STOPPED] * 6
            assert all(d.events > 1000 for d in run.events_dropped.values()), run.events_dropped
            assert "events not kept" in repr(run)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    # on a machine already busy (session 23: load 10, four other jobs) the best call ended 2.0 s after it
    assert min(overshoots) < 1.5 + 2 * loaded, (overshoots, loaded)


def test_a_huge_middle_is_estimated_and_says_so(tmp_path, monkeypatch):
    path = str(tmp_path / "rank0.events")
    write_events(path, 10_000)
    monkeypatch.setattr(event_files, "_MIDDLE_COUNTED", 1000)  # as if the middle were gigabytes
    dropped = event_files.read_record(path, keep=1000).dropped
    assert dropped.estimated and 8_000 < dropped.events < 10_000  # 9,000 really
    assert str(dropped).startswith("about ")
