"""The fifth campaign: what a rank's record *names* is untrusted too, and how a rank ends is told as Python
would tell it. A path in an events line (a frame's file, a caller's file) may be a FIFO, a file of hundreds of
megabytes or a file outside the folder: the kernel and ``barrierlab report`` read only a regular ``.py`` file of
bounded size from it, never block, never keep it. ``sys.exit(True)``, ``SystemExit(2**100)`` and
``sys.exit("message")`` end a rank with the status Python gives; an exception whose ``__str__`` raises
KeyboardInterrupt is still reported; a rank whose files another rank removed is said to be so; a rank cannot
start ranks of its own. Blocking inputs are guarded by the pytest timeout, never by a timing assertion."""

from __future__ import annotations

import json
import linecache
import os
import pickle
import subprocess
import sys
import tempfile
import time

import pytest
import torch.distributed as dist

import barrierlab as bl
from barrierlab import _files, launch, record
from barrierlab._protocol import Outcome, RankFiles, Status, run_dir_prefix
from barrierlab.collect import from_records
from barrierlab.sites import Site


def _run_folder() -> str:
    return os.path.dirname(os.readlink("/proc/self/fd/1"))  # a rank's stdout is its file in the run's folder


def _name_in(events: str, path: str, where: str, like: str) -> None:
    """The attack: append to an events file a copy of the recorder's own line for ``like`` (a barrier, a
    span) that names ``path`` as its frame's file, line 1 (``where="file"``), or as the file of the caller of a frame
    cloudpickle renamed (``where="callers"``)."""
    with open(events) as f:
        line = next(json.loads(text) for text in reversed(f.read().splitlines()) if f'"name":"{like}"' in text)
    line["id"] += 10**6
    if where == "file":
        line["file"], line["line"] = path, 1
    else:
        line["file"], line["func"], line["callers"] = "<dynamic-code>", "helper", [[path, 1, "train"]]
    with open(events, "a") as f:
        f.write("\n" + json.dumps(line) + "\n")


def name_a_path_in_my_events(path: str, where: str) -> str:
    dist.barrier()
    _name_in(os.path.join(_run_folder(), f"rank{dist.get_rank()}.events"), path, where, "barrier")
    return "named"


def _read_so_far() -> int:
    """Bytes this process has read with read() calls so far (``rchar`` of /proc/self/io)."""
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])


# --- 1. paths named inside an events file ------------------------------------------------------------------
@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["file", "callers"])
def test_a_fifo_named_in_a_rank_events_line_never_blocks_the_kernel(tmp_path, where):
    fifo = str(tmp_path / "train.py")  # named like a source file: the kind of file decides, not its name
    os.mkfifo(fifo)
    run = bl.run(name_a_path_in_my_events, 2, args=(fifo, where), timeout=10, deadline=30)
    assert run.values == ["named", "named"], run
    assert str(run.diagnosis) and run.ledger()  # every reader of sites has run


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["file", "callers"])
def test_a_huge_file_named_in_a_rank_events_line_is_neither_read_nor_kept(tmp_path, where):
    big = str(tmp_path / "huge.py")
    with open(big, "wb") as f:
        f.truncate(300 << 20)  # sparse: 300 MB of zeros that cost no disk
    before = _read_so_far()
    run = bl.run(name_a_path_in_my_events, 2, args=(big, where), timeout=10, deadline=30)
    str(run.diagnosis)
    read = _read_so_far() - before
    assert run.values == ["named", "named"], run
    assert read < 50 << 20, f"the kernel read {read:,} bytes"
    assert big not in linecache.cache and big not in _files._sources


def test_source_files_read_for_sites_are_bounded_in_number_and_bytes(tmp_path):
    for i in range(_files.SOURCE_FILES_KEPT + 10):
        path = tmp_path / f"m{i}.py"
        path.write_text(f"value = {i}\n")
        assert Site(str(path), 1).code == f"value = {i}"
    assert len(_files._sources) <= _files.SOURCE_FILES_KEPT
    assert _files._source_bytes <= _files.SOURCE_BYTES_KEPT


def test_no_source_file_is_read_once_the_reading_budget_is_spent(tmp_path, monkeypatch):
    monkeypatch.setattr(_files, "_spent", [])
    path = tmp_path / "late.py"
    path.write_text("x = 1\n")
    _files.charge(_files.SOURCE_BUDGET)  # as if a second had gone on reading files a record named
    assert Site(str(path), 1).code == ""
    _files._spent.clear()
    assert Site(str(path), 1).code == "x = 1"


# --- 2. barrierlab report on a folder it did not write -----------------------------------------------------
def write_records_naming(folder, named: dict[str, str]) -> None:
    """What a torchrun worker leaves (the recorder's own lines and outcome), plus, for each span name in
    ``named``, a copy of that span's line naming another file (the attack on ``report``)."""
    os.makedirs(folder, exist_ok=True)
    files = RankFiles(str(folder), 0)
    record.start(files.events, 0)
    for name in named:
        with bl.span(name):
            pass
    record.stop()
    for name, path in named.items():
        where = "callers" if name.startswith("caller") else "file"
        _name_in(files.events, path, where, name)
    outcome = Outcome(rank=0, world_size=1, status=Status.FINISHED, pid=os.getpid())
    outcome.t_start, outcome.t_end = time.monotonic() - 0.01, time.monotonic()
    outcome.write(files.outcome)


def test_report_shows_lines_of_python_files_only(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET line one\n")
    source = tmp_path / "train.py"
    source.write_text("loss = compute()  # SHOWN\n")
    write_records_naming(tmp_path / "records", {"secret": str(secret), "source": str(source)})
    run = from_records(str(tmp_path / "records"))
    where = {e.name: e.where for e in run[0].events if e.id > 10**6}
    assert "secret.txt:1" in where["secret"] and "TOPSECRET" not in where["secret"]
    assert "loss = compute()  # SHOWN" in where["source"]


@pytest.mark.timeout(120)
def test_report_on_records_naming_fifos_ends(tmp_path):
    fifos = {name: str(tmp_path / f"{name}.py") for name in ("file-fifo", "caller-fifo")}
    for path in fifos.values():
        os.mkfifo(path)
    write_records_naming(tmp_path / "records", fifos)
    done = subprocess.run(
        [sys.executable, "-m", "barrierlab", "report", str(tmp_path / "records")],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_report_help_says_what_it_reads_of_files_records_name():
    from barrierlab.__main__ import report_help

    assert ".py file" in report_help() and "FIFO" in report_help()


# --- 3. how a rank ends -------------------------------------------------------------------------------------
def exit_as(code):
    if dist.get_rank() == 1:
        return "rank 1's own"
    if code == "not ok":
        ok = False
        sys.exit(not ok)
    raise SystemExit(code)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "code, status",
    [(True, 1), ("not ok", 1), (False, 0), (2**100, 255), (-1, 255), (300, 44), ("no data found", 1)],
    ids=["True", "not-ok", "False", "2**100", "-1", "300", "message"],
)
def test_a_rank_exits_with_the_status_python_gives_its_exit_code(code, status):
    run = bl.run(exit_as, 2, args=(code,), timeout=10, deadline=30)
    assert run[1].status == Status.FINISHED and run[1].value == "rank 1's own", run
    assert run[0].status == Status.EXITED and run[0].exit_code == status, run
    assert f"exited with code {status} before returning" in run[0].summary()
    assert "damaged" not in repr(run)
    if isinstance(code, str) and code != "not ok":
        assert code in run[0].stderr  # printed to stderr, as Python does


class StrRaisesKeyboardInterrupt(Exception):
    def __str__(self):
        raise KeyboardInterrupt("from __str__")


class ReprRaisesSystemExit(Exception):
    def __str__(self):
        raise SystemExit(3)

    def __repr__(self):
        raise SystemExit(4)


def raise_an_error_whose_str_raises(kind: str):
    if dist.get_rank() == 1:
        return "rank 1's own"
    raise StrRaisesKeyboardInterrupt("boom") if kind == "KeyboardInterrupt" else ReprRaisesSystemExit("boom")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["KeyboardInterrupt", "SystemExit"])
def test_an_exception_whose_str_raises_a_base_exception_is_reported_with_its_type(kind):
    run = bl.run(raise_an_error_whose_str_raises, 2, args=(kind,), timeout=10, deadline=30)
    assert run[1].value == "rank 1's own", run
    assert run[0].status == Status.RAISED and run[0].exit_code != 70, run
    name = "StrRaisesKeyboardInterrupt" if kind == "KeyboardInterrupt" else "ReprRaisesSystemExit"
    assert name in run[0].traceback and "raise_an_error_whose_str_raises" in run[0].traceback
    assert "its message could not be shown" in run[0].traceback
    assert name in repr(run) and name in str(run.diagnosis)


# --- 4. a rank's files removed by another rank ----------------------------------------------------------------
def remove_rank1s_files(at_once: bool) -> str:
    if dist.get_rank() == 1:
        return "rank 1's own"
    folder = _run_folder()
    if at_once:  # the moment rank 1's outcome is there, before the kernel may have seen it
        give_up = time.monotonic() + 20
        while not os.path.exists(os.path.join(folder, "rank1.outcome")) and time.monotonic() < give_up:
            time.sleep(0.0005)
    else:
        time.sleep(0.5)
    for name in os.listdir(folder):
        if name.startswith("rank1."):
            os.unlink(os.path.join(folder, name))
    return "rank 0's own"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("at_once", [False, True], ids=["later", "at-once"])
def test_a_rank_whose_files_another_rank_removed_is_said_to_be_so(at_once):
    run = bl.run(remove_rank1s_files, 2, args=(at_once,), timeout=10, deadline=30)
    assert run[0].status == Status.FINISHED and run[0].value == "rank 0's own", run
    assert "before returning from the function" not in run[1].summary(), run
    assert "removed before the run ended" in repr(run), run
    if not at_once:  # the kernel held rank 1's outcome open from its end: its result stands
        assert run[1].status == Status.FINISHED and run[1].value == "rank 1's own", run


def replace_rank0s_outcome_later() -> str:
    """rank 1 replaces rank 0's outcome (barrierlab's own writer, no seal) half a second after it appeared."""
    if dist.get_rank() == 0:
        return "rank 0's own"
    path = os.path.join(_run_folder(), "rank0.outcome")
    give_up = time.monotonic() + 20
    while not os.path.exists(path) and time.monotonic() < give_up:
        time.sleep(0.01)
    time.sleep(0.5)
    forged = Outcome(rank=0, world_size=2, status=Status.FINISHED, pid=os.getpid(), value=pickle.dumps("forged"))
    os.unlink(path)
    forged.write(path)
    return "rank 1's own"


@pytest.mark.timeout(120)
def test_an_outcome_replaced_after_the_kernel_saw_it_is_read_from_the_file_it_held():
    run = bl.run(replace_rank0s_outcome_later, 2, timeout=10, deadline=30)
    assert run.values == ["rank 0's own", "rank 1's own"], run
    assert "rank 0's record: outcome file replaced before the run ended" in repr(run)


# --- 5. a rank that starts ranks of its own ----------------------------------------------------------------
def sleep_long() -> None:
    time.sleep(60)


def call_run_inside_a_rank() -> str:
    return repr(bl.run(sleep_long, 1, timeout=30, deadline=40))


@pytest.mark.timeout(120)
def test_a_rank_calling_run_is_refused_and_leaves_no_folder():
    run = bl.run(call_run_inside_a_rank, 1, timeout=5, deadline=8)
    assert run[0].status == Status.RAISED, run
    assert "inside a rank of another barrierlab.run" in str(run[0].exception)
    left = [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(f"barrierlab-run-{run[0].pid}-")]
    assert left == []


def make_a_run_folder_of_my_own() -> str:
    """What ``barrierlab.run`` makes first, as a rank that took the run marker out of its environment would."""
    return tempfile.mkdtemp(prefix=run_dir_prefix(os.getpid(), launch._my_start()))


@pytest.mark.timeout(120)
def test_a_run_folder_a_rank_made_is_removed_when_the_run_ends():
    run = bl.run(make_a_run_folder_of_my_own, 1, timeout=5, deadline=10)
    assert run.ok, run
    assert not os.path.exists(run[0].value)


def test_report_reads_records_whose_first_line_has_no_wall_clock(tmp_path):
    """attack8 a7: the grammar makes the meta line's ``wall`` optional, but ``report`` read it unconditionally
    (KeyError). The records are what the recorder writes, with ``wall`` dropped from the first line."""
    folder = tmp_path / "records"
    write_records_naming(folder, {})
    events = RankFiles(str(folder), 0).events
    with open(events) as f:
        lines = f.read().splitlines(keepends=True)
    meta = json.loads(lines[0])
    assert "wall" in meta  # what the recorder writes
    del meta["wall"]
    with open(events, "w") as f:
        f.write(json.dumps(meta) + "\n" + "".join(lines[1:]))
    run = from_records(str(folder))
    assert run[0].status == Status.FINISHED, run


@pytest.mark.parametrize(
    "first, lines",
    [
        # attack8 a7: both finite JSON numbers, their difference (the rank's clock anchor) is inf
        ({"t0": -1e308, "wall": 1e308}, ['{"id":1,"kind":"collective","name":"barrier","t":1.5,"seq":1}']),
        # a believable clock, events at absurd times (1e308 - t0 is finite; the axis's margin made it inf)
        (
            {"t0": 1.0, "wall": 1000.0},
            [
                '{"id":1,"kind":"collective","name":"barrier","t":1e308,"seq":1}',
                '{"id":2,"kind":"collective","name":"barrier","t":-1e308,"end":1e308,"seq":2}',
            ],
        ),
    ],
)
def test_a_timeline_of_records_with_absurd_times_is_drawn_and_says_what_was_left_out(tmp_path, first, lines):
    """``report --timeline`` on records of ±1e308: matplotlib raised "Axis limits cannot be NaN or Inf". The rank
    whose times cannot be placed has them left out, by name; the other rank's record is drawn."""
    folder = tmp_path / "records"
    folder.mkdir()
    meta = {"meta": "start", "rank": 0, "pid": 5, **first}
    (folder / "rank0.events").write_text("\n".join([json.dumps(meta), *lines]) + "\n")
    (folder / "rank1.events").write_text(
        '{"meta":"start","rank":1,"t0":1.0,"pid":6,"wall":1000.0}\n'
        '{"id":1,"kind":"collective","name":"barrier","t":1.5,"end":1.75,"seq":1}\n'
    )
    run = from_records(str(folder))
    assert run[0].events == [] and run[0].record_notes, run[0].record_notes
    assert "not a time" in str(run) or "not within" in str(run), run
    assert [e.name for e in run[1].events] == ["barrier"]
    run.timeline().savefig(tmp_path / "timeline.png")  # raised ValueError before
    assert (tmp_path / "timeline.png").stat().st_size > 0


def dig_deep_in_the_run_folder(depth=3000):
    """A chain of ``depth`` folders in the run's folder (where the rank's stdout file is), made through folder
    descriptors: the path is longer than PATH_MAX (modelled on attack8's a2)."""
    run_dir = os.path.dirname(os.readlink("/proc/self/fd/1"))
    fd = os.open(run_dir, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)
    return run_dir


def test_a_run_folder_too_deep_for_rmtree_is_removed_and_the_call_returns():
    """Python 3.11's shutil.rmtree recursed once per level: RecursionError out of bl.run (ignore_errors does not
    catch it), and the folder stayed behind for every later kernel's first run to fail on."""
    run = bl.run(dig_deep_in_the_run_folder, 1, deadline=30).raise_if_failed()
    (run_dir,) = run.values
    assert not os.path.exists(run_dir), run_dir


def test_the_answers_kept_about_which_files_are_the_learners_are_bounded():
    """attack8 a10: every path a rank's frames or stderr named stayed in ``sites._learners`` for the kernel's life
    (+100 MB over 120 runs of a rank printing invented stack-dump lines)."""
    from barrierlab import sites

    for i in range(3 * sites._LEARNERS_KEPT):
        sites.is_learners(f"/invented/by/a/rank/{i}.py")
    assert len(sites._learners) <= sites._LEARNERS_KEPT
    assert sites.is_learners("/invented/by/a/rank/0.py")  # still answered, the same way


def test_an_events_line_with_thousands_of_callers_keeps_a_bounded_chain(tmp_path):
    """attack8 a14: lines under the line limit holding 20,000 ``callers`` frames each were kept whole (+320 MB for
    30 MB of records). The recorder writes at most 17; the reader keeps the innermost and outermost
    ``CALLERS_READ`` and counts the rest as left out."""
    from barrierlab import events as event_files

    folder = tmp_path / "records"
    write_records_naming(folder, {"caller": str(tmp_path / "train.py")})
    path = RankFiles(str(folder), 0).events
    with open(path) as f:
        lines = f.read().splitlines()
    i, line = next((i, json.loads(t)) for i, t in enumerate(lines) if '"callers"' in t)
    line["callers"] = [[f"/x/f{k}.py", k + 1, "g"] for k in range(5000)]
    lines[i] = json.dumps(line)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    run = from_records(str(folder))
    (event,) = [e for e in run[0].events if e.callers and e.func == "helper"]
    assert len(event.callers) == 2 * event_files.CALLERS_READ
    assert event.left_out >= 5000 - 2 * event_files.CALLERS_READ


def write_my_own_flight_record(entries: int) -> int:
    """A rank (recording off) writes a flight-recorder file of its own, of ``entries`` tiny entries, where torch's
    dump would go (modelled on attack8's a13)."""
    path = RankFiles(_run_folder(), dist.get_rank()).flight
    entry = {"profiling_name": "gloo:barrier", "collective_seq_id": 1, "state": "completed"}
    with open(path, "w") as f:
        json.dump({"entries": [entry] * entries}, f)
    return os.path.getsize(path)


@pytest.mark.timeout(120)
def test_a_ranks_own_flight_file_is_read_within_bounds():
    """A 30 MiB flight file of tiny entries cost the kernel 770 MB and seconds past the deadline. Over 8 MiB it
    is not read; under, at most the last 20,000 entries are kept (torch keeps 2,000 by default)."""
    from barrierlab import collect

    big = bl.run(write_my_own_flight_record, 1, args=(200_000,), record=False, deadline=20).raise_if_failed()
    assert big.values[0] > collect.FLIGHT_LIMIT and big[0].flight is None, big.values
    many = bl.run(write_my_own_flight_record, 1, args=(60_000,), record=False, deadline=20).raise_if_failed()
    assert many.values[0] < collect.FLIGHT_LIMIT and len(many[0].flight) == collect.FLIGHT_ENTRIES, many.values


def raise_a_huge_message(n: int):
    missing = [f"/data/shards/train-{i:06d}-of-{n:06d}.parquet" for i in range(n)]
    raise ValueError(f"{len(missing)} shards are missing: {missing}")


@pytest.mark.timeout(120)
def test_an_exception_with_a_huge_message_is_reported_clipped_not_as_a_damaged_file():
    """A rank raising a ValueError with a 9 MB message wrote it whole into its outcome's header, which the kernel
    refuses over 8 MiB: the report said "its outcome file is damaged" and the ValueError was lost (attack10 a16).
    The rank writes the message's head and tail, and says how much it left out."""
    run = bl.run(raise_a_huge_message, 1, args=(300_000,), deadline=60, live=False)
    message = run[0].error_message
    assert run.statuses == ["raised"], run.statuses
    assert "damaged" not in message and "unreadable" not in message, message[:300]
    assert message.startswith("ValueError: 300000 shards are missing: ['/data/shards/train-000000"), message[:300]
    assert message.rstrip().endswith("train-299999-of-300000.parquet']"), message[-300:]
    assert type(run[0].exception) is ValueError


def test_an_outcome_clips_its_texts_to_head_and_tail(tmp_path):
    text = "head " + "x" * (9 << 20) + " tail"
    Outcome(rank=0, world_size=1, status=Status.RAISED, message=text, traceback=text).write(str(tmp_path / "o"))
    read = Outcome.read(str(tmp_path / "o"))
    assert read.message == read.traceback and len(read.message) < 100_000
    assert read.message.startswith("head x") and read.message.endswith("x tail")
    assert f"{len(text) - (64 << 10):,} characters left out" in read.message


def leave_the_temporary_folder_alone() -> int:
    return os.getpid()


@pytest.mark.timeout(120)
def test_the_temporary_folder_is_listed_after_a_run_only_if_it_changed(monkeypatch, tmp_path):
    """Looking for the ranks' own run folders lists the temporary folder (5-6 ms of the kernel's CPU at the end of
    every call, 3,500 entries): it is looked in only when an entry of it changed while the ranks ran. The quiet
    runs use a temporary folder of their own (the machine's is shared with every other program)."""
    looked = []
    real = launch.remove_stale_run_dirs

    def counted(*args, **kwargs):
        if kwargs.get("owners") is not None:
            looked.append(kwargs["owners"])
        return real(*args, **kwargs)

    monkeypatch.setattr(launch, "remove_stale_run_dirs", counted)
    with monkeypatch.context() as private:
        private.setattr(tempfile, "tempdir", str(tmp_path))  # the kernel's run folders go there
        for _ in range(3):
            assert launch._removals.wait(60)  # the last run's folder, removed in the background, is gone
            run = bl.run(leave_the_temporary_folder_alone, 2, timeout=5, deadline=20)
            assert run.ok, run
    assert looked == [], looked
    made = bl.run(make_a_run_folder_of_my_own, 1, timeout=5, deadline=10)
    assert made.ok and not os.path.exists(made[0].value), made
    assert looked == [{made[0].pid}], looked
