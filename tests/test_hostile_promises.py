"""The seventh campaign (attack7): six promises an independent attacker found broken, each held here.

A large returned value is read back only up to ``collect.VALUE_LIMIT`` and within the deadline (else its rank
fails with a message saying so, the other ranks' values stand); a function that replaces or closes its output
streams still has its outcome written; a script run by ``barrierlab run`` ends as ``python train.py`` would
(``atexit`` handlers run, unclosed files flushed); no ``__del__`` of a returned value runs in the kernel;
``barrierlab report`` reads no pickle it does not use; bad ``report`` arguments are refused with argparse's
one-line error and exit code 2. Blocking inputs are guarded by the pytest timeout, never by a timing assertion."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import barrierlab as bl
from barrierlab import Status
from barrierlab._protocol import SEAL_KEY_SIZE, Outcome

KERNEL_PID = os.getpid()  # the test process; ranks and checking children see another PID
SRC = os.path.dirname(os.path.dirname(os.path.abspath(bl.__file__)))  # the barrierlab under test, for subprocesses


# --- 1. a large value is not read past the limit, nor past the deadline ----------------------------------------
def return_big_on_rank_0(megabytes):
    import torch.distributed as dist

    return b"z" * (megabytes * 10**6) if dist.get_rank() == 0 else 7


@pytest.mark.timeout(120)
def test_a_value_larger_than_the_limit_fails_its_rank_with_a_message_and_the_others_stand():
    from barrierlab import collect

    megabytes = getattr(collect, "VALUE_LIMIT", 64 << 20) // 10**6 + 16  # 83 MB: just over the 64 MiB limit
    run = bl.run(return_big_on_rank_0, 2, args=(megabytes,), timeout=20, deadline=60, live=False)
    assert run[1].status == Status.FINISHED and run[1].value == 7, run
    assert run[0].status == Status.RAISED and run[0].value is None, run
    text = str(run[0].exception)
    assert f"rank 0 returned {megabytes} MB" in text and "write large results to a file" in text, text


def test_a_value_still_unread_when_the_deadline_passes_is_left_unread_and_the_header_stands(tmp_path):
    key = os.urandom(SEAL_KEY_SIZE)
    path = str(tmp_path / "rank0.outcome")
    Outcome(rank=0, world_size=1, status=Status.FINISHED, value=b"v" * (3 << 20), value_repr="b'vvv'").write(path, key)
    late = Outcome.read(path, key, until=time.monotonic() - 1)
    assert late.status == Status.FINISHED and late.value is None and "deadline passed" in late.unread["value"]
    assert Outcome.read(path, key).value == b"v" * (3 << 20)  # in time: read, and its digest checked
    small = str(tmp_path / "rank1.outcome")
    Outcome(rank=1, world_size=2, status=Status.FINISHED, value=b"s" * 1000).write(small, key)
    assert Outcome.read(small, key, until=time.monotonic() - 1).value == b"s" * 1000  # a small one: read anyway


def test_a_sealed_value_changed_after_the_seal_is_refused(tmp_path):
    from barrierlab._protocol import ForgedOutcome

    key = os.urandom(SEAL_KEY_SIZE)
    path = tmp_path / "rank0.outcome"
    Outcome(rank=0, world_size=1, status=Status.FINISHED, value=b"honest").write(str(path), key)
    data = path.read_bytes().replace(b"honest", b"forged")
    path.unlink()
    path.write_bytes(data)
    with pytest.raises(ForgedOutcome):
        Outcome.read(str(path), key)
    assert Outcome.read(str(path), key, pickles=False).value is None  # the header alone is still the rank's


# --- 2. a function that replaces or closes its streams still reports ------------------------------------------
def returns_after_stdout_none():
    sys.stdout = None
    return 42


def raises_after_closing_stderr():
    sys.stderr.close()
    raise ValueError("the real error")


class NoFlush:
    def write(self, text):
        return len(text)


def exits_after_a_writer_without_flush():
    sys.stderr = NoFlush()
    sys.exit("a message")


@pytest.mark.timeout(120)
def test_a_function_that_replaces_or_closes_its_streams_still_has_its_outcome():
    run = bl.run(returns_after_stdout_none, 2, live=False)
    assert run.values == [42, 42], run
    run = bl.run(raises_after_closing_stderr, 2, live=False)
    assert run.statuses == [Status.RAISED] * 2, run
    assert isinstance(run[0].exception, ValueError) and "the real error" in str(run[0].exception), run
    run = bl.run(exits_after_a_writer_without_flush, 1, live=False)
    assert run[0].status == Status.EXITED and run[0].exit_code == 1 and "a message" in run[0].stderr, run


# --- 3. a script ends as `python train.py` does: atexit handlers, unclosed files flushed -------------------
SCRIPT = """\
import atexit
import sys
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
log = open(f"{FOLDER}/log{rank}.txt", "w")
log.write(f"rank {rank} trained\\n")
atexit.register(lambda: open(f"{FOLDER}/atexit{rank}.txt", "w").write("bye\\n"))
dist.barrier()
dist.destroy_process_group()
if "--raise" in sys.argv:
    raise ValueError("after the log")
"""


@pytest.mark.timeout(180)
@pytest.mark.parametrize("ending", ["returns", "raises"])
def test_a_script_ends_as_the_interpreter_would_atexit_handlers_run_and_files_are_flushed(tmp_path, ending):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.replace("{FOLDER}", str(tmp_path)))
    argv = ["--", "--raise"] if ending == "raises" else []
    done = subprocess.run(
        [sys.executable, "-m", "barrierlab", "run", str(script), "-n", "2", *argv],
        capture_output=True,
        text=True,
        timeout=150,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert done.returncode == (1 if ending == "raises" else 0), done.stdout[-2000:] + done.stderr[-2000:]
    for rank in (0, 1):
        assert (tmp_path / f"log{rank}.txt").read_text() == f"rank {rank} trained\n"
        assert (tmp_path / f"atexit{rank}.txt").read_text() == "bye\n"


# --- 4. no __del__ of a returned value runs in the kernel ----------------------------------------------------
class DelInTheKernel:
    """A plain class (no custom pickling): it used to come back as itself, and its __del__ ran in the kernel
    when the Run was dropped (the attacker's called os._exit; this one leaves a mark)."""

    mark = ""
    kernel = -1

    def __init__(self, mark: str, kernel: int) -> None:
        self.mark, self.kernel = mark, kernel

    def __del__(self):  # the kernel's pid is passed in: a rank imports this module afresh, with its own KERNEL_PID
        if os.getpid() == self.kernel and self.mark:
            with open(self.mark, "w") as f:
                f.write("__del__ ran in the kernel")


def return_an_object_with_del(mark, kernel):
    return DelInTheKernel(mark, kernel)


@pytest.mark.timeout(120)
def test_a_returned_objects_del_never_runs_in_the_kernel(tmp_path):
    from barrierlab.unpickle import NotRebuilt

    mark = tmp_path / "mark"
    run = bl.run(return_an_object_with_del, 1, args=(str(mark), os.getpid()), live=False)
    value = run[0].value
    assert run[0].status == Status.FINISHED and isinstance(value, NotRebuilt), run
    assert "__del__" in repr(value) and "DelInTheKernel" in repr(value)
    del run, value
    gc.collect()
    assert not mark.exists(), mark.read_text()


# --- 5. report reads no pickle ---------------------------------------------------------------------------------
@pytest.mark.timeout(200)
def test_report_reads_no_pickle_of_a_record_over_a_sparse_file(tmp_path):
    """A record naming a 2 GiB pickle over a sparse file (0 bytes on disk): `report` reads none of it. Its peak
    memory is compared with the same report on a record naming no pickle (the interpreter and torch alone take
    about 0.3-0.6 GB, depending on the machine), not with a fixed figure."""
    base = {"rank": 0, "world_size": 2, "status": "finished", "pid": 1, "t_start": 1.0, "t_end": 1.1,
            "clock": 1.0e9, "value_repr": "1"}  # fmt: skip
    report = (
        "import resource, sys; from barrierlab.__main__ import main; code = main(['report', sys.argv[1]]); "
        "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(code)"
    )

    def peak_kib(named: int | None) -> int:
        folder = tmp_path / f"named{named}"
        folder.mkdir()
        (folder / "rank0.outcome").write_bytes(json.dumps({**base, "blobs": [None, None]}).encode() + b"\n")
        line = json.dumps({**base, "rank": 1, "blobs": [named, None]}).encode() + b"\n"
        with open(folder / "rank1.outcome", "wb") as f:
            f.write(line)
            f.truncate(len(line) + (named or 0))
        done = subprocess.run(
            [sys.executable, "-c", report, str(folder)],
            capture_output=True,
            text=True,
            timeout=90,
            env={**os.environ, "PYTHONPATH": SRC},
        )
        assert done.returncode == 0 and "finished" in done.stdout, done.stderr[-2000:]
        return int(done.stderr.rsplit("MAXRSS", 1)[1].split()[0])

    alone, sparse = peak_kib(None), peak_kib(2 << 30)
    assert sparse - alone < 512 * 1024, (alone, sparse)  # reading the pickle would add 2 GiB


# --- 6. report's bad arguments: one line, exit code 2 ---------------------------------------------------------
@pytest.mark.timeout(120)
@pytest.mark.parametrize("folder", ["missing", "file", "/dev/zero", "empty"])
def test_report_refuses_a_folder_that_is_not_one_with_one_line_and_exit_code_2(tmp_path, folder):
    path = {"missing": str(tmp_path / "nope"), "file": str(tmp_path / "f.txt"), "empty": str(tmp_path)}.get(
        folder, folder
    )
    (tmp_path / "f.txt").write_text("x")
    done = subprocess.run(
        [sys.executable, "-m", "barrierlab", "report", path],
        capture_output=True,
        text=True,
        timeout=100,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "argument folder" in done.stderr and repr(path) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 2  # argparse's usage line and its one-line error


def test_a_timeline_folder_where_no_file_can_be_created_is_refused_up_front(tmp_path):
    import argparse

    from barrierlab.__main__ import _timeline_file

    with pytest.raises(argparse.ArgumentTypeError, match="not writable"):
        _timeline_file("/proc/x.png")  # os.access says yes to root: a file is tried
    assert _timeline_file(str(tmp_path / "t.png")) == str(tmp_path / "t.png")
    assert os.listdir(tmp_path) == []  # the trial file is gone


def test_a_timeline_that_cannot_be_saved_after_the_run_is_one_line_and_the_results_stand(tmp_path, capsys):
    from barrierlab.__main__ import _show
    from barrierlab.collect import from_records

    for rank in (0, 1):
        Outcome(rank=rank, world_size=2, status=Status.FINISHED, t_start=1.0, t_end=1.1, clock=1e9).write(
            str(tmp_path / f"rank{rank}.outcome")
        )
    code = _show(from_records(str(tmp_path)), str(tmp_path / "gone" / "t.png"))
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err and "timeline was not written" in err, err
    assert "finished" in out


# --- the repro's value, as the attacker ran it: a rank's value with a __del__ that ends the kernel -------------
DEL_BOMB = textwrap.dedent(
    """
    import gc, os, sys
    sys.path.insert(0, sys.argv[1])
    import barrierlab as bl
    import test_hostile_promises as t
    t.KERNEL_PID = os.getpid()
    run = bl.run(t.return_an_exiting_del, 1, live=False)
    run = bl.run(t.return_an_exiting_del, 1, live=False)
    gc.collect()
    print("kernel survived", flush=True)
    """
)


class ExitsInTheKernel:
    def __del__(self):
        if os.getpid() == int(os.environ.get("DEL_BOMB_KERNEL", "0")):
            os._exit(53)


def return_an_exiting_del():
    return ExitsInTheKernel()


@pytest.mark.timeout(180)
def test_a_del_that_exits_cannot_end_the_kernel(tmp_path):
    script = tmp_path / "kernel.py"
    script.write_text(
        DEL_BOMB.replace("t.KERNEL_PID = os.getpid()", "os.environ['DEL_BOMB_KERNEL'] = str(os.getpid())")
    )
    done = subprocess.run(
        [sys.executable, str(script), os.path.dirname(os.path.abspath(__file__))],
        capture_output=True,
        text=True,
        timeout=150,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert done.returncode == 0 and "kernel survived" in done.stdout, (done.returncode, done.stderr[-2000:])


# --- 7. a plain value that grows once unpickled (lead, session 8) ------------------------------------------------
def return_many_empty_lists(count):
    """Rank 1 returns ``count`` empty lists: two bytes each pickled, 56 bytes and a slot each rebuilt."""
    import torch.distributed as dist

    return [[] for _ in range(count)] if dist.get_rank() == 1 else "small"


@pytest.mark.timeout(180)
def test_a_plain_value_that_takes_too_much_memory_once_unpickled_fails_its_rank_and_the_others_stand(monkeypatch):
    """Plain data was unpickled in the kernel whatever its size: 60 MiB of empty lists (under the 64 MiB read limit)
    take 2 GiB and, with the collector on, a minute. A pickle over ``INLINE_LIMIT`` with many objects is rebuilt in a
    trial child first, which says what it took; over ``VALUE_MEMORY`` the rank fails with the figure. (The limit is
    lowered here so the rank need not build 2 GiB.)"""
    from barrierlab import unpickle

    monkeypatch.setattr(unpickle, "VALUE_MEMORY", 32 << 20)
    psutil = pytest.importorskip("psutil")
    bl.run(return_many_empty_lists, 2, args=(10,), live=False).raise_if_failed()  # what a first run imports
    before = psutil.Process().memory_info().rss
    run = bl.run(return_many_empty_lists, 2, args=(1_500_000,), timeout=20, deadline=60, live=False)
    grown = psutil.Process().memory_info().rss - before
    assert run[0].status == Status.FINISHED and run[0].value == "small", run
    assert run[1].status == Status.RAISED and run[1].value is None, run
    text = str(run[1].exception)
    assert "rank 1 returned a value that cannot be unpickled" in text and "MiB of memory" in text, text
    assert grown < 48 << 20, grown  # the 100 MB list was never rebuilt here


def test_a_large_plain_value_is_not_rebuilt_past_the_deadline():
    """A plain pickle that takes long to rebuild (many small objects) and arrives with little time left is not
    rebuilt in the kernel: its rank fails saying how long it took and how long was left. A tensor of the same size
    (few opcodes, one byte run) is still read directly, at once."""
    import pickle

    import torch

    from barrierlab.unpickle import unpickle_isolated

    slow = pickle.dumps([{} for _ in range(1_000_000)], protocol=5)
    started = time.monotonic()
    [(ok, reason)] = unpickle_isolated([slow], within=0.05)
    assert not ok and ("took" in reason or "left before the run's deadline" in reason), reason
    assert time.monotonic() - started < 3.0  # the keeper's grace, never the rebuild
    tensor = torch.arange(2_000_000, dtype=torch.float32)
    [(ok, value)] = unpickle_isolated([pickle.dumps(tensor)], within=0.0)
    assert ok and torch.equal(value, tensor)


# --- 8. an outcome that cannot be written (attack8 a12) -------------------------------------------------------
def returns_42_with_a_tiny_file_size_limit():
    import resource

    # soft and hard: a soft limit alone is raised back to the hard one once the function returns (attack31 a02)
    resource.setrlimit(resource.RLIMIT_FSIZE, (10, 10))
    return 42


def test_a_rank_whose_outcome_cannot_be_written_is_not_said_to_have_stopped_before_returning():
    """Writing the outcome failed (EFBIG here, ENOSPC on a full disk) after the function returned: the rank ended
    with code 70 and the run said "before returning from the function", with nothing in its stderr. It now ends
    with 74, says why on its stderr when it can, and the run says its outcome could not be written."""
    run = bl.run(returns_42_with_a_tiny_file_size_limit, 2, deadline=20, live=False)
    for r in run:
        assert r.status == Status.EXITED and r.exit_code == 74, r
        assert "before returning" not in r.summary() and "could not write" in r.summary(), r.summary()


# --- attack9 a8: a notebook that holds a thousand files open ---------------------------------------------------
def returns_one():
    return 1


def test_a_kernel_holding_more_than_1024_descriptors_still_runs():
    """New descriptors then get numbers above 1024, which ``select.select`` refuses ("filedescriptor out of range
    in select()"): every wait on a pipe or pidfd of the kernel's must take them (lazily opened images, h5py)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1400:
        pytest.skip(f"this machine allows {hard} open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1400) if hard == resource.RLIM_INFINITY else hard, hard))
    held = [open(os.devnull) for _ in range(1100)]
    try:
        assert held[-1].fileno() > 1024
        run = bl.run(returns_one, 2, deadline=30)
        assert run.values == [1, 1], run.diagnosis
    finally:
        for f in held:
            f.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# --- attack9 a10: the notebook's working folder was removed ----------------------------------------------------
def cwd_inode():
    return os.stat(".").st_ino


def test_a_removed_working_folder_still_runs_and_the_ranks_share_it(tmp_path):
    """``with TemporaryDirectory() as d: os.chdir(d)`` leaves the kernel in a removed folder: a plain call and
    forked workers still run there; so do the ranks (``os.getcwd()`` raised FileNotFoundError out of bl.run)."""
    bl.run(returns_one, 2)  # torch loads oneMKL lazily, and cannot from a removed folder: not barrierlab's to fix
    here = os.getcwd()
    gone = tmp_path / "gone"
    gone.mkdir()
    os.chdir(gone)
    try:
        gone.rmdir()
        run = bl.run(cwd_inode, 2, deadline=30)
        assert run.values == [os.stat(".").st_ino] * 2, run.diagnosis
        failing = bl.run(raises_here, 2, deadline=30)
        assert "ValueError" in str(failing.diagnosis)
    finally:
        os.chdir(here)


def raises_here():
    raise ValueError("from a removed folder")


def lists_its_working_folder():
    import glob

    listed = {}
    for name, call in (
        ("listdir('.')", lambda: os.listdir(".")),
        ("listdir()", os.listdir),
        ("scandir('.')", lambda: [entry.name for entry in os.scandir(".")]),
        ("glob('*')", lambda: glob.glob("*")),
    ):
        try:
            listed[name] = call()
        except OSError as error:
            listed[name] = f"{type(error).__name__}: {error}"
    return listed


def test_a_rank_lists_a_removed_working_folder_as_empty_as_the_kernel_does(tmp_path):
    """glibc reads a removed folder as empty (the kernel's getdents says ENOENT; POSIX makes that the end of the
    folder), so the kernel, a plain forked child and a rank entered through /proc/KERNEL/cwd all list []; but in
    a rank the recorder's audit hook made the path absolute (``os.getcwd()``: FileNotFoundError) and its
    exception failed the learner's os.listdir(".") with ENOENT."""
    bl.run(returns_one, 2)  # torch loads oneMKL lazily, and cannot from a removed folder (as above)
    here = os.getcwd()
    gone = tmp_path / "gone"
    gone.mkdir()
    os.chdir(gone)
    try:
        gone.rmdir()
        in_kernel = lists_its_working_folder()
        assert all(v == [] for v in in_kernel.values()), in_kernel
        for record in (True, False):
            run = bl.run(lists_its_working_folder, 2, deadline=30, record=record)
            assert run.values == [in_kernel, in_kernel], (record, run.values, run.diagnosis)
    finally:
        os.chdir(here)


# --- attack9 a13: the learner's own faulthandler on SIGUSR1 ------------------------------------------------------
def stuck_with_own_stack_handler():
    import faulthandler
    import signal

    import torch.distributed as dist

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # "kill -USR1 <pid> to see where it hangs"
    if dist.get_rank() == 0:
        while True:
            time.sleep(0.05)  # the line rank 0 is stuck on
    dist.barrier()


def test_a_learners_own_sigusr1_handler_does_not_hide_where_a_rank_was_stuck():
    run = bl.run(stuck_with_own_stack_handler, 2, timeout=1, deadline=3)
    assert 0 in run.stuck, run.stuck
    assert "the line rank 0 is stuck on" in str(run.stuck[0]), run.stuck


# --- attack9 a6, a7: what a plain return does to the function's locals -----------------------------------------
def leaves_a_file_open_and_a_temporary_folder(folder):
    import json
    import tempfile

    import torch.distributed as dist

    rank = dist.get_rank()
    f = open(os.path.join(folder, f"metrics-{rank}.json"), "w")  # never closed: a plain return closes it
    json.dump({"rank": rank, "loss": 0.25}, f)
    scratch = tempfile.TemporaryDirectory(prefix="barrierlab-test-scratch-")  # never cleaned up explicitly
    return scratch.name


def test_a_file_the_function_never_closed_reaches_the_disk(tmp_path):
    """Before: the rank ended with the function's frame alive (kept so that no destructor of the learner's runs
    after the outcome), so a file it never closed stayed empty while every rank finished; a plain call, a forked
    worker and torchrun all write it. Its TemporaryDirectory is removed too (the next tests)."""
    import shutil

    run = bl.run(leaves_a_file_open_and_a_temporary_folder, 2, args=(str(tmp_path),), deadline=30)
    left = [name for name in run.values or () if os.path.exists(name)]
    for name in left:
        shutil.rmtree(name, ignore_errors=True)
    assert run.statuses == ["finished", "finished"], run.diagnosis
    for rank in range(2):
        assert json.loads((tmp_path / f"metrics-{rank}.json").read_text()) == {"rank": rank, "loss": 0.25}
    assert left == []


def leaves_temporary_files(folder, hang_at_exit=False):
    import tempfile
    import weakref

    scratch = tempfile.TemporaryDirectory(dir=folder, prefix="scratch-")  # never cleaned up explicitly
    with open(os.path.join(scratch.name, "ckpt.bin"), "wb") as f:
        f.write(b"\0" * 1024)
    log = tempfile.NamedTemporaryFile(dir=folder, prefix="log-", delete=True)  # never closed
    log.write(b"step 1\n")
    kept = tempfile.NamedTemporaryFile(dir=folder, prefix="kept-", delete=False)  # the learner keeps this one
    kept.write(b"keep me\n")

    class Handle:
        pass

    handle = Handle()
    weakref.finalize(handle, _raise_at_exit)  # printed on stderr; the others run still
    if hang_at_exit:  # made last: run first (newest first, as at exit)
        weakref.finalize(handle, time.sleep, 3600)
    return scratch.name, log.name, kept.name, handle.__class__.__name__


def _raise_at_exit():
    raise RuntimeError("a finalizer that raises at exit")


def test_temporary_files_the_function_left_are_removed_as_a_plain_return_or_torchrun_would(tmp_path):
    """attack9 a6: a ``TemporaryDirectory`` or ``NamedTemporaryFile(delete=True)`` the function made without
    ``with`` stayed in /tmp after bl.run (the rank keeps the function's frame and ends with os._exit); a plain call
    removes them as its frame is freed, torchrun's worker as it returns or, for one still referenced, at exit
    (``weakref.finalize``'s atexit run, the file's destructor). The rank now runs its own atexit finalizers and
    closes its NamedTemporaryFiles after its outcome; a ``delete=False`` file stays, as it would."""
    run = bl.run(leaves_temporary_files, 2, args=(str(tmp_path),), deadline=30)
    assert run.statuses == ["finished", "finished"], run.diagnosis
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(value[2]) for value in run.values)
    assert all("a finalizer that raises at exit" in rank.stderr for rank in run), [r.stderr for r in run]


@pytest.mark.timeout(120)
def test_a_finalizer_that_hangs_at_exit_neither_holds_the_rank_nor_changes_its_outcome(tmp_path):
    """Under torchrun a finalizer that hangs at exit holds the worker, and the job, for ever (checked: killed
    after 45 s); here the rank's exit work is bounded (``_rank.EXIT_WORK_WAIT``), and what it had reported
    stands."""
    from barrierlab import _rank

    run = bl.run(leaves_temporary_files, 2, args=(str(tmp_path), True), deadline=60)
    assert run.statuses == ["finished", "finished"], run.diagnosis
    assert [rank.exit_code for rank in run] == [0, 0] and not any(rank.teardown_hung for rank in run), run
    assert run.values[0][3] == "Handle"
    assert run.elapsed < 30, (run.elapsed, _rank.EXIT_WORK_WAIT)  # not held until the 60 s deadline
    assert all("the rank ended without waiting for it" in rank.stderr for rank in run), [r.stderr for r in run]


def makes_a_shared_memory_segment_and_forgets_it():
    from multiprocessing import shared_memory

    segment = shared_memory.SharedMemory(create=True, size=1 << 20)
    segment.buf[:4] = b"\1\2\3\4"
    return segment.name


def test_a_shared_memory_segment_a_rank_forgot_is_unlinked_as_python_does_at_exit():
    """attack9 a4: multiprocessing's resource tracker unlinks a segment left registered when its process exits;
    the run's clean-up killed the tracker first, and the segment stayed in /dev/shm (RAM) after the run."""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    run = bl.run(makes_a_shared_memory_segment_and_forgets_it, 2, deadline=30)
    assert run.statuses == ["finished", "finished"], run.diagnosis
    left = [name for name in run.values if os.path.exists(os.path.join("/dev/shm", name.lstrip("/")))]
    for name in left:
        os.unlink(os.path.join("/dev/shm", name.lstrip("/")))
    assert not left


def makes_segments_then_is_stopped_at_the_deadline(folder, notebooks):
    from multiprocessing import resource_tracker, shared_memory

    import torch.distributed as dist

    rank = dist.get_rank()
    made = shared_memory.SharedMemory(create=True, size=1 << 20)  # never unlinked: the tracker's to unlink
    kept = shared_memory.SharedMemory(create=True, size=4096)
    resource_tracker.unregister(kept._name, "shared_memory")  # the usual way to keep one past the process
    attached = shared_memory.SharedMemory(name=notebooks)  # the notebook's, which the run did not create
    # Python 3.11 registers an attached segment too, so its tracker would unlink it as its processes end (as the
    # rank's may, if it reads the end of its pipe before it is killed): the usual guard against that
    resource_tracker.unregister(attached._name, "shared_memory")
    names = [made.name, kept.name]
    if rank == 1:  # what the rank forks notes in the same file
        read, write = os.pipe()
        if os.fork() == 0:
            child = shared_memory.SharedMemory(create=True, size=1 << 20)
            os.write(write, child.name.encode())
            time.sleep(3600)
        names.append(os.read(read, 100).decode())
    with open(os.path.join(folder, f"rank{rank}"), "w") as f:
        f.write(" ".join(names))
    time.sleep(3600)  # stopped at the deadline, with its process group: multiprocessing's tracker dies too
    return attached


def test_shared_memory_a_rank_made_is_unlinked_after_it_is_stopped_at_the_deadline(tmp_path):
    """attack9 a4: a rank stopped at the deadline is killed with its process group, multiprocessing's resource
    tracker with it, and the segments it made stayed in /dev/shm (RAM) for good. Each rank now notes the segments
    it creates, and they are unlinked once the ranks are gone; never one the run did not create (the notebook's,
    which a rank attached to) nor one the rank unregistered to keep it."""
    from multiprocessing import shared_memory

    from barrierlab import launch

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")

    def present(name):
        return os.path.exists(os.path.join("/dev/shm", name.lstrip("/")))

    notebooks = shared_memory.SharedMemory(create=True, size=4096)
    names = []
    try:
        run = bl.run(
            makes_segments_then_is_stopped_at_the_deadline, 2, args=(str(tmp_path), notebooks.name), timeout=20,
            deadline=4,
        )  # fmt: skip
        made = {rank: (tmp_path / f"rank{rank}").read_text().split() for rank in range(2)}
        names = [name for rank_names in made.values() for name in rank_names]
        assert run.statuses == [Status.STOPPED, Status.STOPPED], run.diagnosis
        assert launch._removals.wait(30)  # with the run's folder, in the background
        left = [name for name in names if present(name)]
        kept = [made[0][1], made[1][1]]
        assert sorted(left) == sorted(kept), (made, left)
        assert present(notebooks.name)
    finally:
        for name in names:
            if present(name):
                os.unlink(os.path.join("/dev/shm", name.lstrip("/")))
        notebooks.close()
        notebooks.unlink()


def test_segment_notes_are_bounded_and_name_only_what_the_rank_made(tmp_path):
    """The notes are a rank's to write: a name that leaves /dev/shm, a symlink, a file whose inode is not the one
    noted, or a name unregistered since, is never unlinked; a FIFO in the notes' place costs nothing."""
    from barrierlab import _segments

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    mine = f"/barrierlab-test-{os.getpid()}"
    other = f"/barrierlab-test-other-{os.getpid()}"
    paths = {name: os.path.join("/dev/shm", name[1:]) for name in (mine, other)}
    try:
        for path in paths.values():
            with open(path, "wb") as f:
                f.write(b"x")
        info = os.stat(paths[mine])
        notes = [
            ["+", "shared_memory", mine, info.st_dev, info.st_ino],
            ["+", "shared_memory", other, info.st_dev, info.st_ino],  # the inode of another file
            ["+", "shared_memory", "/../../tmp/x", info.st_dev, info.st_ino],
            ["+", "shared_memory", "/psm_gone", 1, 2],
        ]
        text = "".join(json.dumps(n) + "\n" for n in notes) + "not json\n"
        (tmp_path / _segments.NOTES_FILE).write_text(text + json.dumps(["-", "shared_memory", mine]) + "\n")
        assert _segments.unlink_left(str(tmp_path)) == []  # unregistered: the learner keeps it
        assert all(os.path.exists(p) for p in paths.values())
        (tmp_path / _segments.NOTES_FILE).write_text(text)
        assert _segments.unlink_left(str(tmp_path)) == [paths[mine]]
        assert not os.path.exists(paths[mine]) and os.path.exists(paths[other])
        (tmp_path / _segments.NOTES_FILE).unlink()
        os.mkfifo(tmp_path / _segments.NOTES_FILE)
        assert _segments.unlink_left(str(tmp_path)) == []  # (a blocking read would hang the pytest timeout)
    finally:
        for path in paths.values():
            if os.path.exists(path):
                os.unlink(path)


def replace_myself(code: int) -> None:
    """A rank's function that replaces the rank with another program (os.execv), which exits with ``code``."""
    os.execv("/bin/sh", ["sh", "-c", f"exit {code}"])


@pytest.mark.timeout(120)
def test_a_rank_that_replaces_itself_with_another_program_ends_as_that_program_ends():
    """attack8 a9: a rank that exec'd was "did not finish … after 0 collective calls" whatever the program did."""
    run = bl.run(replace_myself, 2, args=(0,), deadline=30)
    assert run.statuses == ["finished", "finished"], run
    assert "replaced itself with another program (sh -c exit 0" in str(run), run
    run = bl.run(replace_myself, 1, args=(5,), deadline=30)
    assert run[0].status == "exited" and run[0].exit_code == 5, run
