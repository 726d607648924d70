"""The recorder writes its lines behind, in batches, yet every line a reader needs is in the file in time: before a
call that blocks, before the rank ends itself, within ``record.WRITE_EVERY`` while it computes, and never twice
when the rank forks. Runs of real ranks; what is checked is the record they leave."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
import torch.distributed as dist

import barrierlab as bl
from barrierlab import record
from barrierlab._protocol import Status

BURST = 50


def burst(folder: str, tag: str) -> None:
    """Spans and file events in quick succession: most of them still pending when the next thing happens."""
    path = os.path.join(folder, f"{tag}{dist.get_rank()}.txt")
    for i in range(BURST):
        with bl.span(f"{tag} {i}"):
            pass
    with open(path, "w") as f:
        f.write("x")


def burst_then_os_exit(folder):
    record.WRITE_EVERY = 3600.0  # no timer: nothing but the exit itself may write the pending lines
    burst(folder, "before exit")
    os._exit(3)  # no clean-up at all: the recorder's lines must already be out


@pytest.mark.timeout(120)
def test_a_rank_that_ends_with_os_exit_leaves_every_line_it_recorded(tmp_path):
    run = bl.run(burst_then_os_exit, 1, args=(str(tmp_path),), deadline=60)
    assert run.statuses == [Status.EXITED], run
    names = [e.name for e in run[0].events]
    assert [n for n in names if n.startswith("before exit")] == [f"before exit {i}" for i in range(BURST)]
    assert [e.path for e in run[0].events if e.kind == "file"] == [str(tmp_path / "before exit0.txt")]


def burst_then_stuck_in_a_barrier(folder):
    burst(folder, "before barrier")
    if dist.get_rank() == 1:
        time.sleep(600)  # never arrives: rank 0 waits in its barrier until the deadline
    dist.barrier()


@pytest.mark.timeout(180)
def test_a_rank_stuck_in_a_barrier_has_everything_up_to_the_barrier_in_its_record(tmp_path):
    run = bl.run(burst_then_stuck_in_a_barrier, 2, args=(str(tmp_path),), timeout=60, deadline=6)
    stuck = run[0].events
    assert [e.name for e in stuck if e.kind == "compute"] == [f"before barrier {i}" for i in range(BURST)]
    assert [e.path for e in stuck if e.kind == "file"] == [str(tmp_path / "before barrier0.txt")]
    assert stuck[-1].name == "barrier" and stuck[-1].end is None


def burst_then_fork():
    record.WRITE_EVERY = 3600.0  # no timer: the lines are still pending at the fork
    events_file = record._recorder.path
    for i in range(BURST):
        with bl.span(f"before fork {i}"):
            pass
    child = os.fork()
    if child == 0:
        os._exit(0)  # a child that ends at once: what the parent had recorded is not its to write
    os.waitpid(child, 0)
    record.stop()
    with open(events_file) as f:
        return [(json.loads(line)["id"], json.loads(line)["name"]) for line in f if '"kind"' in line]


@pytest.mark.timeout(120)
def test_a_forked_child_never_writes_the_lines_its_parent_recorded():
    lines = bl.run(burst_then_fork, 1, deadline=60).raise_if_failed().values[0]
    ids = [i for i, _ in lines]
    # the spans once each; and the fork, the child's first event (its own, naming the fork) and the parent's join
    assert len(ids) == len(set(ids)), lines
    assert sorted(name for _, name in lines if not name.startswith("before fork")) == ["fork", "forked", "join"]
    assert len(lines) == BURST + 3, lines


def import_a_module_of_my_own(folder):
    """Write a module, then import it: the import system lists the folder and reads the file."""
    with open(os.path.join(folder, "freshly_written_helper.py"), "w") as f:  # code: never a handoff
        f.write("VALUE = 7\n")
    with open(os.path.join(folder, "numbers.txt"), "w") as f:
        f.write("7\n")
    sys.path.insert(0, folder)
    import freshly_written_helper  # noqa: PLC0415 - imported while the rank records

    return freshly_written_helper.VALUE


def test_the_import_system_reading_modules_is_not_a_file_handoff(tmp_path):
    """Only the learner's own writes are recorded (the module it generates too, since attack18 a19), not the
    import system's listing of the folder and its read of the module (seen as a 'list' of tests/ when a test
    module's folder changed after the warm process cached it)."""
    run = bl.run(import_a_module_of_my_own, 1, args=(str(tmp_path),), deadline=60)
    assert run.values == [7], run
    files = [(e.name, e.path) for e in run[0].events if e.kind == "file"]
    assert files == [
        ("write", str(tmp_path / "freshly_written_helper.py")),
        ("write", str(tmp_path / "numbers.txt")),
    ], files


def pretty_json_then_barrier():
    """attack12 r5: a rank makes json.dumps pretty-print for its own logs, then does nothing wrong."""
    import functools

    json.dumps = functools.partial(json.dumps, indent=2)
    with open(os.devnull, "w") as f:
        f.write(json.dumps({"step": 1}))  # recorded: a line barrierlab writes with its own json.dumps
    dist.barrier()
    return dist.get_rank()


def test_a_rank_that_replaces_json_dumps_still_finishes_with_its_value():
    run = bl.run(pretty_json_then_barrier, 2, timeout=5, deadline=20)
    assert [str(s) for s in run.statuses] == ["finished", "finished"], run
    assert run.values == [0, 1]
    assert all(r.events and not r.events_dropped for r in run.ranks), run


def remove_an_old_checkpoint_folder(folder):
    """attack12 r9: shutil.rmtree removes each file by name in its folder's descriptor (os.unlink(name,
    dir_fd=...)); rank 1 reads the run's own config.json, of the same name, in the working folder."""
    import shutil

    os.chdir(folder)
    if dist.get_rank() == 0:
        os.makedirs("checkpoint-100", exist_ok=True)
        for name in ("checkpoint-100/config.json", "config.json"):
            with open(name, "w") as f:
                f.write("{}")
    dist.barrier()
    if dist.get_rank() == 0:
        shutil.rmtree(os.path.join(folder, "checkpoint-100"))
    else:
        time.sleep(0.2)
        with open("config.json") as f:
            f.read()
    dist.barrier()


def test_removals_by_name_in_a_folders_descriptor_are_recorded_at_their_own_path(tmp_path):
    run = bl.run(remove_an_old_checkpoint_folder, 2, args=(str(tmp_path),), timeout=10, deadline=30)
    assert run.ok, run
    removed = [e.path for e in run[0].events if e.kind == "file" and e.name == "remove"]
    # the file by its own path, then the folder itself (os.rmdir is recorded too: attack14 a14)
    assert removed == [str(tmp_path / "checkpoint-100" / "config.json"), str(tmp_path / "checkpoint-100")], removed
    assert run.races() == [], run.races()


def look_at_a_folder_with_isfile(folder):
    """os.path.isfile of a folder is False because of what is there, not because nothing is: no miss to record."""
    os.path.isfile(folder)
    os.path.exists(os.path.join(folder, "nothing-here"))
    dist.barrier()


def test_isfile_of_a_folder_is_not_recorded_as_a_missing_file(tmp_path):
    run = bl.run(look_at_a_folder_with_isfile, 2, args=(str(tmp_path),), timeout=10)
    assert run.ok, run
    looks = [(e.path, e.value) for e in run[0].events if e.kind == "file" and e.name == "exists"]
    assert looks == [(str(tmp_path / "nothing-here"), "missing")], looks
