"""What a rank leaves behind is untrusted input: the recorder owns its files, returned values are checked
inside the deadline, text is handled in linear time, reprs are bounded, report reads only regular files of
bounded size, and nothing a rank forks outlives the warm process. Slow inputs are made so large that a
quadratic or unbounded reader would take minutes: the pytest timeout is the guard, never a timing assertion."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch.distributed as dist
from conftest import wait_until_gone

import barrierlab as bl
from barrierlab import _contain, _files, launch, record, unpickle
from barrierlab import events as event_files
from barrierlab._protocol import Outcome, RankFiles, Status, tidy
from barrierlab.collect import from_records as run_from_records
from barrierlab.result import RankResult, Run

KERNEL_PID = os.getpid()  # the test process; a child forked from it sees this same number


# --- 1. the recorder owns its files -----------------------------------------------------------------------
def _events_fd() -> int:
    name = f"rank{dist.get_rank()}.events"
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").endswith(name):
                return int(fd)
        except OSError:
            pass
    raise AssertionError("no events file open")


def close_the_events_fd_and_reuse_it(folder):
    """The attack: close the recorder's descriptor, open a file of our own at that same number."""
    fd = _events_fd()
    os.close(fd)
    path = os.path.join(folder, f"mine{dist.get_rank()}")
    own = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    if own != fd:
        os.dup2(own, fd)
        os.close(own)
    os.write(fd, b"mine\n")
    dist.barrier()
    with bl.span("after the attack"):
        pass
    os.close(fd)
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.timeout(120)
def test_a_rank_reusing_the_events_descriptor_gets_no_event_lines_and_still_reports(tmp_path):
    run = bl.run(close_the_events_fd_and_reuse_it, 2, args=(str(tmp_path),), timeout=10, deadline=30)
    assert run.statuses == [Status.FINISHED, Status.FINISHED], run
    assert run.values == [b"mine\n", b"mine\n"]
    assert {e.name for e in run[0].events} >= {"barrier", "after the attack"}  # recording went on, by path


def where_is_the_events_file():
    fd = _events_fd()
    import fcntl

    return fd, bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)


@pytest.mark.timeout(120)
def test_the_events_file_is_held_close_on_exec_at_a_high_descriptor():
    (fd, cloexec), *_ = bl.run(where_is_the_events_file, 1).values
    assert cloexec
    assert fd >= record.HIGH_FD


def test_a_span_name_of_megabytes_is_recorded_bounded(tmp_path):
    path = str(tmp_path / "rank0.events")
    record.start(path, 0)
    try:
        for _ in range(3):
            with bl.span("x" * 8_000_000):
                pass
    finally:
        record.stop()
    assert os.path.getsize(path) < 64 * 1024
    names = [e.name for e in event_files.read_record(path).events]
    assert len(names) == 3 and all(len(n) <= record.MAX_TEXT for n in names)


# --- 2. untrusted values inside the deadline ------------------------------------------------------------
def slow_list(seconds: float, log: str) -> list:
    with open(log, "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(seconds)
    return [1, 2, 3]


class SlowToUnpickle:
    def __init__(self, seconds: float, log: str) -> None:
        self.args = (seconds, log)

    def __reduce__(self):
        return slow_list, self.args


class HangsInAChild:
    """A value whose ``__del__`` hangs anywhere but in the test process."""

    def __del__(self):
        if os.getpid() != KERNEL_PID:
            time.sleep(1000)


def test_a_value_is_unpickled_once_and_handed_over(tmp_path):
    log = str(tmp_path / "calls")
    [(ok, value)] = unpickle.unpickle_isolated([pickle.dumps(SlowToUnpickle(0, log))], within=30)
    assert ok and value == [1, 2, 3]
    pids = open(log).read().split()
    assert len(pids) == 1 and int(pids[0]) != os.getpid()  # once, in the throwaway child only


def test_unpickling_is_bounded_by_what_remains_of_the_deadline(tmp_path):
    blob = pickle.dumps(SlowToUnpickle(1000, str(tmp_path / "calls")))
    [(ok, reason)] = unpickle.unpickle_isolated([blob], within=0.5)
    assert not ok and "longer than 0.5 s" in reason


@pytest.mark.timeout(60)
def test_a_hanging_del_costs_the_trial_child_not_the_verdict():
    [(ok, value)] = unpickle.unpickle_isolated([pickle.dumps(HangsInAChild())], within=30)
    # the verdict came back; the class defines __del__, so it comes back as a stand-in (its __del__ would run
    # in the kernel when the value is dropped)
    assert ok and isinstance(value, unpickle.NotRebuilt) and "__del__" in value.reason, value


@pytest.mark.timeout(60)
def test_ctrl_c_ends_the_check_at_once_and_the_child_with_it(tmp_path):
    log = tmp_path / "calls"
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        unpickle.unpickle_isolated([pickle.dumps(SlowToUnpickle(1000, str(log)))], within=300)
    timer.cancel()
    assert wait_until_gone([int(log.read_text().split()[0])], 2.0) == []


CHECKING_KERNEL = textwrap.dedent(
    """
    import os, pickle, sys, time
    from barrierlab import unpickle

    def slow(log):
        open(log, "w").write(str(os.getpid()))
        time.sleep(1000)

    class Slow:
        def __reduce__(self):
            return slow, (sys.argv[1],)

    unpickle.unpickle_isolated([pickle.dumps(Slow())], within=300)
    """
)


@pytest.mark.timeout(240)
def test_the_trial_child_never_outlives_the_kernel(tmp_path):
    log = tmp_path / "child"
    kernel = subprocess.Popen([sys.executable, "-c", CHECKING_KERNEL, str(log)], env=dict(os.environ))
    give_up = time.monotonic() + 180  # importing barrierlab imports torch: tens of seconds on a loaded machine
    while not (log.exists() and log.read_text()) and time.monotonic() < give_up:
        time.sleep(0.05)
    child = int(log.read_text())
    kernel.kill()
    kernel.wait()
    left = wait_until_gone([child], 3.0)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


def returns_slow_value(log):
    return SlowToUnpickle(4, log)


@pytest.mark.timeout(120)
def test_a_value_slower_to_unpickle_than_the_deadline_fails_its_rank_once(tmp_path):
    log = str(tmp_path / "calls")
    run = bl.run(returns_slow_value, 1, args=(log,), timeout=2, deadline=3)
    assert run[0].status == Status.RAISED and "longer than" in str(run[0].exception), run
    assert len(open(log).read().split()) == 1


def _deep(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


# made in the test, not at import: the ranks of the other tests import this module too
VALUES = {
    "nested a million deep": lambda: _deep(1_000_000),
    "repr raises": BadRepr,
    "ten million characters": lambda: "y" * 10_000_000,
    "a million items": lambda: list(range(1_000_000)),
}


@pytest.mark.parametrize("make", VALUES.values(), ids=VALUES.keys())
def test_reprs_of_a_run_are_bounded_and_never_raise(make):
    value = make()
    result = RankResult(rank=0, status=Status.FINISHED, value=value)
    run = Run(world_size=1, ranks=[result], elapsed=0.1, timeout=1, deadline=2)
    for text in (repr(run), run._repr_html_(), repr(result), result.summary()):
        assert len(text) < 5_000


# --- 3. text in linear time ------------------------------------------------------------------------------
@pytest.mark.timeout(30)
@pytest.mark.parametrize("text", ["[" * 400_000, "[" * 400_000 + "gloo/", " [" + "1" * 400_000 + "]"])
def test_tidy_is_linear(text):
    assert 0 < len(tidy(text)) <= len(text)


@pytest.mark.timeout(30)
def test_a_rank_failure_with_a_message_of_brackets_is_reported():
    from barrierlab.result import RankFailed

    failed = RankResult(rank=0, status=Status.RAISED, traceback="Traceback\nValueError: " + "[" * 400_000)
    run = Run(world_size=1, ranks=[failed], elapsed=0.1, timeout=1, deadline=2)
    assert "ValueError" in str(RankFailed(run))


# --- 4. nothing a rank forks outlives the warm process ---------------------------------------------------
def fork_a_daemon_then_kill_the_warm_process(folder, rename=False, kill_the_kernel=False):
    """A Python daemon forked without exec into a session of its own (renamed, if asked, so that it carries no
    mark of the run but its cgroup); then the warm process (and, if asked, the kernel) is SIGKILLed."""
    warm = os.getppid()
    kernel = _contain._stat(warm)[0]
    read_fd, write_fd = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            if rename:
                import ctypes

                ctypes.CDLL(None).prctl(_contain.PR_SET_NAME, ctypes.c_char_p(b"innocent"), 0, 0, 0)
            os.write(write_fd, str(os.getpid()).encode())
            if kill_the_kernel:  # from the daemon: the rank dies with the warm process
                time.sleep(0.2)
                os.kill(warm, signal.SIGKILL)
                os.kill(kernel, signal.SIGKILL)
            while True:
                time.sleep(1)
        os._exit(0)
    os.close(write_fd)
    pid = int(os.read(read_fd, 32))
    with open(os.path.join(folder, "daemon"), "w") as f:
        f.write(str(pid))
    if not kill_the_kernel:
        os.kill(warm, signal.SIGKILL)
    time.sleep(1000)


@pytest.fixture(params=["cgroup", "no cgroup"])
def containment(request, monkeypatch):
    """Each run in a cgroup of its own (where the system allows it), or as where it does not."""
    if request.param == "no cgroup":
        monkeypatch.setattr(_contain, "make_run_cgroup", lambda name: "")
    elif not _contain.run_cgroups_available():
        pytest.skip(f"no run cgroup here: {_contain.cgroup_unavailable}")
    return request.param


def _daemon_left(folder, seconds: float) -> list[int]:
    daemon = int((folder / "daemon").read_text())
    left = wait_until_gone([daemon], seconds)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


@pytest.mark.timeout(120)
def test_a_forked_daemon_ends_when_a_rank_kills_the_warm_process(tmp_path, containment):
    try:
        bl.run(fork_a_daemon_then_kill_the_warm_process, 1, args=(str(tmp_path),), timeout=5, deadline=10)
    except launch.LaunchError:
        pass
    assert _daemon_left(tmp_path, 2.0) == []


@pytest.mark.timeout(120)
def test_a_forked_daemon_that_renames_itself_ends_when_a_rank_kills_the_warm_process(tmp_path, containment):
    """Its name was the run's last mark on it (issue 21: a forked child shows no environment marker): the run's
    cgroup holds it, and without one the run's folder, which every rank holds open and it inherited."""
    try:
        bl.run(fork_a_daemon_then_kill_the_warm_process, 1, args=(str(tmp_path), True), timeout=5, deadline=10)
    except launch.LaunchError:
        pass
    assert _daemon_left(tmp_path, 2.0) == []


@pytest.mark.timeout(120)
def test_a_daemon_whose_rank_killed_the_warm_process_and_the_kernel_ends_at_the_next_kernels_start(tmp_path):
    """No barrierlab process is left to end it; the next kernel's first run ends it (by the dead kernel's
    cgroup) before it starts anything."""
    if not _contain.run_cgroups_available():
        pytest.skip(f"no run cgroup here: {_contain.cgroup_unavailable}")
    script = textwrap.dedent(f"""
        import barrierlab as bl
        from test_hostile_read import fork_a_daemon_then_kill_the_warm_process
        bl.run(fork_a_daemon_then_kill_the_warm_process, 1, args=({str(tmp_path)!r}, True, True), deadline=30)
    """)
    tests = os.path.dirname(__file__)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    kernel = subprocess.run([sys.executable, "-c", script], env=env, cwd=tests, timeout=100, capture_output=True)
    assert kernel.returncode == -signal.SIGKILL, kernel.stderr.decode()[-2000:]
    daemon = int((tmp_path / "daemon").read_text())
    # nothing of the dead kernel's was left to end it. Another kernel of this user that starts meanwhile (a
    # parallel test worker's first run after its warm process was replaced) sweeps the dead kernel's cgroups
    # as the next kernel would: the last CI saw the daemon already gone, ended by such a sweep
    alive = wait_until_gone([daemon], 0.5) == [daemon]
    launch.remove_stale_run_dirs()  # what the next kernel's first run does
    assert _daemon_left(tmp_path, 2.0) == [], "alive before the sweep" if alive else "gone before the sweep"


# --- 6. report on a folder it did not write -------------------------------------------------------------
def write_records(folder, world_size: int = 2) -> None:
    """What torchrun workers leave: each rank's recorder output and outcome."""
    os.makedirs(folder, exist_ok=True)
    for rank in range(world_size):
        files = RankFiles(str(folder), rank)
        record.start(files.events, rank)
        with bl.span("work"):
            pass
        record.stop()
        outcome = Outcome(rank=rank, world_size=world_size, status=Status.FINISHED, pid=os.getpid())
        outcome.t_start, outcome.t_end = time.monotonic() - 0.01, time.monotonic()
        outcome.write(files.outcome)


def test_records_written_by_workers_are_reported(tmp_path):
    write_records(tmp_path)
    assert run_from_records(str(tmp_path)).statuses == [Status.FINISHED] * 2


@pytest.mark.timeout(60)
@pytest.mark.parametrize("target", ["elsewhere", "/dev/zero"])
def test_a_symlinked_rank_file_is_refused_by_name(tmp_path, target):
    write_records(tmp_path / "records")
    if target == "elsewhere":
        write_records(tmp_path / "other")
        target = str(tmp_path / "other" / "rank1.events")
    events = tmp_path / "records" / "rank1.events"
    events.unlink()
    events.symlink_to(target)
    with pytest.raises(_files.UnsafeEntry, match="rank1.events"):
        run_from_records(str(tmp_path / "records"))


@pytest.mark.timeout(60)
def test_a_fifo_as_a_rank_file_is_refused_by_name(tmp_path):
    write_records(tmp_path)
    (tmp_path / "rank1.outcome").unlink()
    os.mkfifo(tmp_path / "rank1.outcome")
    with pytest.raises(_files.UnsafeEntry, match="rank1.outcome"):
        run_from_records(str(tmp_path))


@pytest.mark.timeout(60)
def test_an_overlong_line_in_an_events_file_is_not_kept(tmp_path):
    write_records(tmp_path)
    line = b'{"id":99,"kind":"compute","name":"' + b"z" * (4 * _files.MAX_LINE) + b'","t":1.0}\n'
    with open(tmp_path / "rank0.events", "ab") as f:
        f.write(line)
    run = run_from_records(str(tmp_path))
    assert [e.name for e in run[0].events] == ["work"]


@pytest.mark.timeout(60)
def test_a_rank_number_beyond_the_maximum_is_refused_by_name(tmp_path):
    write_records(tmp_path)
    (tmp_path / "rank100000.events").write_bytes(b"")
    with pytest.raises(_files.UnsafeEntry, match="rank100000.events"):
        run_from_records(str(tmp_path))


@pytest.mark.timeout(60)
def test_a_claimed_world_size_beyond_the_maximum_is_not_believed(tmp_path):
    write_records(tmp_path)
    outcome = Outcome(rank=0, world_size=100_000, status=Status.FINISHED, pid=os.getpid())
    (tmp_path / "rank0.outcome").unlink()
    outcome.write(str(tmp_path / "rank0.outcome"))
    assert run_from_records(str(tmp_path)).world_size == 2


# --- 7. fuzzing the readers (Hypothesis), bounded in examples ------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
outcomes = st.builds(
    Outcome,
    rank=st.integers(0, 64),
    world_size=st.integers(1, 65),
    status=st.sampled_from(list(Status)),
    pid=st.integers(0, 1 << 22),
    t_start=st.none() | st.floats(allow_nan=False, allow_infinity=False),  # as time.monotonic() gives
    message=st.text(max_size=50),
    traceback=st.text(max_size=50),
    value=st.none() | st.binary(max_size=40),
    exception=st.none() | st.binary(max_size=40),
)


def _checked(path: str):
    """What any outcome file must give: an Outcome of the right types, None, or a ValueError."""
    try:
        outcome = Outcome.read(path)
    except ValueError:
        return None
    assert isinstance(outcome.status, Status) and isinstance(outcome.rank, int) and isinstance(outcome.message, str)
    assert outcome.value is None or isinstance(outcome.value, bytes)
    return outcome


@FUZZ
@given(outcome=outcomes)
def test_fuzz_an_outcome_reads_back_as_written(tmp_path_factory, outcome):
    path = str(tmp_path_factory.mktemp("o") / "rank0.outcome")
    outcome.write(path)
    assert Outcome.read(path) == outcome


@FUZZ
@given(outcome=outcomes, cut=st.integers(0, 400), junk=st.binary(max_size=40), at=st.integers(0, 400))
def test_fuzz_a_damaged_outcome_is_read_or_refused_with_a_value_error(tmp_path_factory, outcome, cut, junk, at):
    path = tmp_path_factory.mktemp("o") / "rank0.outcome"
    outcome.write(str(path))
    data = path.read_bytes()
    data = data[: min(at, len(data))] + junk + data[min(at, len(data)) :]
    path.unlink()
    path.write_bytes(data[: max(len(data) - cut, 0)])
    _checked(str(path))


@FUZZ
@given(outcome=outcomes, junk=st.binary(min_size=1, max_size=40), at=st.integers(0, 400), other=st.booleans())
def test_fuzz_a_sealed_outcome_changed_in_any_way_is_refused(tmp_path_factory, outcome, junk, at, other):
    """An outcome sealed with its rank's key reads back as written with that key; any change to the file (or the
    same outcome sealed with another key) is refused with a ValueError (ForgedOutcome for a seal that does not
    match), never read as the rank's."""
    from barrierlab._protocol import SEAL_KEY_SIZE, ForgedOutcome

    key = os.urandom(SEAL_KEY_SIZE)
    path = tmp_path_factory.mktemp("o") / "rank0.outcome"
    outcome.write(str(path), os.urandom(SEAL_KEY_SIZE) if other else key)
    if other:
        with pytest.raises(ForgedOutcome):
            Outcome.read(str(path), key)
        return
    assert Outcome.read(str(path), key) == outcome
    data = path.read_bytes()
    changed = data[: min(at, len(data))] + junk + data[min(at, len(data)) + len(junk) :]
    if changed == data:
        return
    path.unlink()
    path.write_bytes(changed)
    with pytest.raises(ValueError):
        Outcome.read(str(path), key)


@FUZZ
@given(
    outcome=outcomes,
    name=st.sampled_from(["rank", "world_size", "status", "pid", "t_end", "message", "blobs"]),
    value=json_values,
)
def test_fuzz_an_outcome_field_of_another_type_is_refused(tmp_path_factory, outcome, name, value):
    import json

    path = tmp_path_factory.mktemp("o") / "rank0.outcome"
    outcome.write(str(path))
    header, _, rest = path.read_bytes().partition(b"\n")
    fields = json.loads(header)
    fields[name] = value
    path.unlink()
    path.write_bytes(json.dumps(fields).encode() + b"\n" + rest)
    _checked(str(path))


@FUZZ
@given(
    lines=st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")), max_size=8), limit=st.integers(1, 40)
)
def test_fuzz_bounded_line_keeps_exactly_the_short_lines(tmp_path_factory, lines, limit):
    path = tmp_path_factory.mktemp("l") / "rank0.events"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    kept = []
    with _files.open_regular(str(path)) as f:
        while (line := _files.bounded_line(f, limit)) != b"":
            if line is not None:
                kept.append(line)
    assert kept == [line + b"\n" for line in lines if len(line) + 1 <= limit]


@FUZZ
@given(
    names=st.lists(
        st.from_regex(r"rank(0|[1-9][0-9]{0,5}|0[0-9])\.(events|outcome|stdout|flight|x)", fullmatch=True), max_size=6
    ),
    kind=st.sampled_from(["file", "symlink", "fifo", "folder"]),
)
def test_fuzz_rank_files_lists_regular_files_of_bounded_ranks_or_refuses_by_name(tmp_path_factory, names, kind):
    folder = tmp_path_factory.mktemp("r")
    for name in names:
        path = folder / name
        if path.exists() or path.is_symlink():
            continue
        {"file": lambda: path.write_bytes(b""), "symlink": lambda: path.symlink_to("/dev/zero"),
         "fifo": lambda: os.mkfifo(path), "folder": path.mkdir}[kind]()  # fmt: skip
    try:
        found = _files.rank_files(str(folder), max_ranks=1000)
    except _files.UnsafeEntry as error:
        refused = [n for n in names if n.endswith(("events", "outcome", "stdout", "flight"))]
        assert any(n in str(error) for n in refused)
        return
    assert all(0 <= rank < 1000 for rank in found)
    for rank, kinds in found.items():
        for kind_found in kinds:
            assert (folder / f"rank{rank}.{kind_found}").is_file()


# --- 8. the second campaign: what ranks send back, and what a run is given ------------------------------
def _run_folder() -> str:
    return os.path.dirname(os.readlink("/proc/self/fd/1"))  # a rank's stdout is its file in the run's folder


def forge_rank0s_outcome(how: str):
    """The attack: rank 1 waits until rank 0 has reported, then writes rank 0's outcome file itself, with
    barrierlab's own writer (``value``) or as raw JSON of the wrong types and values (``types``)."""
    if dist.get_rank() == 0:
        return "rank 0's own"
    path = os.path.join(_run_folder(), "rank0.outcome")
    give_up = time.monotonic() + 20
    while not os.path.exists(path) and time.monotonic() < give_up:
        time.sleep(0.01)
    forged = Outcome(rank=0, world_size=2, status=Status.FINISHED, pid=os.getpid(), value=pickle.dumps("forged"))
    if how == "types":
        forged.rank, forged.world_size, forged.t_start, forged.exit_code = 7, 1000, float("nan"), 10**30
    os.unlink(path)
    forged.write(path)
    return "rank 1's own"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["value", "types"])
def test_an_outcome_written_by_another_rank_is_refused_and_the_others_stand(how):
    run = bl.run(forge_rank0s_outcome, 2, args=(how,), timeout=10, deadline=30)
    assert run[1].status == Status.FINISHED and run[1].value == "rank 1's own"
    assert run[0].value != "forged", run
    if run[0].status == Status.FINISHED:  # the kernel had opened rank 0's own outcome before it was replaced
        assert run[0].value == "rank 0's own" and "outcome file replaced before the run ended" in repr(run), run
    else:
        assert run[0].status == Status.RAISED, run
        assert "rank 0's outcome was not written by rank 0" in str(run[0].exception)
    assert "rank 0" in repr(run)


class UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("str() refused")

    def __repr__(self):
        raise RuntimeError("repr() refused")


def raise_an_unprintable_error():
    dist.barrier()
    raise UnprintableError()


@pytest.mark.timeout(120)
def test_an_exception_whose_str_raises_is_reported_with_its_type():
    run = bl.run(raise_an_unprintable_error, 2, timeout=10, deadline=30)
    assert run.statuses == [Status.RAISED, Status.RAISED], run
    for rank in run:
        assert rank.exit_code != 70
        assert "UnprintableError" in rank.traceback and "its message could not be shown" in rank.traceback
        assert type(rank.exception).__name__ == "UnprintableError"
    assert "UnprintableError" in repr(run)


UNPRINTABLE_UNDER_TORCHRUN = """
from barrierlab.torchrun import main

class UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("str() refused")

def fail():
    raise UnprintableError()

if __name__ == "__main__":
    main(fail)
"""


@pytest.mark.timeout(240)
def test_an_exception_whose_str_raises_is_reported_under_torchrun(tmp_path):
    script = tmp_path / "unprintable.py"
    script.write_text(UNPRINTABLE_UNDER_TORCHRUN)
    env = dict(os.environ, BARRIERLAB_RECORD_DIR=str(tmp_path / "records"), GLOO_SOCKET_IFNAME="lo")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1", str(script)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=200)
    assert done.returncode != 0
    run = run_from_records(str(tmp_path / "records"))
    assert run[0].status == Status.RAISED, done.stderr[-3000:]
    assert "UnprintableError" in str(run[0].exception) and "its message could not be shown" in str(run[0].exception)


class AttrConfig:
    """A config as attribute-dict libraries make it: a missing attribute is a KeyError. It pickles (it says
    how), but ``hasattr(config, "__code__")`` raises."""

    def __init__(self, **values):
        self.__dict__["_values"] = values

    def __getattr__(self, name):
        return self.__dict__["_values"][name]

    def __getstate__(self):
        return self.__dict__["_values"]

    def __setstate__(self, values):
        self.__dict__["_values"] = values


def read_the_config(config, also):
    return config.lr + also.lr


@pytest.mark.timeout(120)
def test_an_argument_whose_getattr_raises_key_error_is_sent():
    run = bl.run(
        read_the_config, 2, args=(AttrConfig(lr=0.5),), kwargs={"also": AttrConfig(lr=1)}, timeout=10, deadline=30
    )
    assert run.ok and run.values == [1.5, 1.5], run


def barriers_from_two_threads(count: int) -> int:
    def barriers():
        for _ in range(count):
            dist.barrier()

    helper = threading.Thread(target=barriers)
    helper.start()
    barriers()
    helper.join()
    return count * 2


@pytest.mark.timeout(120)
def test_collectives_from_two_threads_are_all_recorded():
    run = bl.run(barriers_from_two_threads, 2, args=(10,), timeout=20, deadline=60)
    assert run.ok, run
    assert [len([e for e in r.events if e.name == "barrier"]) for r in run] == [20, 20]
    for rank in run:
        assert all(e.end is not None for e in rank.events if e.name == "barrier")
        assert sorted(e.seq for e in rank.events if e.name == "barrier") == list(range(1, 21))


def flood_the_events_file(lines: int, size: int) -> str:
    path = os.path.join(_run_folder(), f"rank{dist.get_rank()}.events")
    name = "n" * size
    with open(path, "ab") as f:
        for i in range(lines):
            f.write(f'{{"id":{10**6 + i},"kind":"compute","name":"{name}","t":1.0,"end":1.5}}\n'.encode())
    return "flooded"


@pytest.mark.timeout(300)
def test_an_events_file_flooded_with_long_lines_is_read_bounded_in_bytes():
    run = bl.run(flood_the_events_file, 2, args=(1200, 250_000), timeout=20, deadline=60)
    assert run.values == ["flooded", "flooded"], run
    for rank in run:
        kept = sum(len(e.name) for e in rank.events)
        most = 2 * event_files.BYTES_KEPT + event_files.MAX_LINE_BYTES  # the head ends with a whole line
        assert kept <= most, f"rank {rank.rank} kept {kept:,} bytes of event names"
        assert rank.events_dropped
    assert "not kept" in repr(run)


ESCAPES = "\x1b[2J\x1b]0;owned\x07\x1b[31mred\x9b1m"


def write_hostile_records(folder) -> None:
    """A torchrun worker's records with terminal escapes in every text a rank writes, and times that are
    not finite (the JSON reader takes NaN and Infinity)."""
    os.makedirs(folder, exist_ok=True)
    files = RankFiles(str(folder), 0)
    record.start(files.events, 0)
    with bl.span("span " + ESCAPES):
        pass
    record.stop()
    with open(files.events, "ab") as f:
        f.write(b'{"id":900,"kind":"compute","name":"forever","t":1.0,"end":Infinity}\n')
        f.write(b'{"id":901,"kind":"compute","name":"never","t":NaN,"end":2.0}\n')
    with open(files.stderr, "w") as f:
        f.write("stderr " + ESCAPES + "\n")
    outcome = Outcome(rank=0, world_size=1, status=Status.RAISED, pid=os.getpid(), error_type="builtins.ValueError")
    outcome.message, outcome.traceback = "message " + ESCAPES, "Traceback\nValueError: message " + ESCAPES
    outcome.t_start, outcome.t_end, outcome.clock = time.monotonic(), float("inf"), float("nan")
    outcome.write(files.outcome)


@pytest.mark.timeout(120)
def test_report_prints_no_terminal_escapes_and_draws_times_that_are_not_finite(tmp_path, capsys):
    from barrierlab.__main__ import main

    write_hostile_records(tmp_path / "records")
    png = tmp_path / "timeline.png"
    code = main(["report", str(tmp_path / "records"), "--timeline", str(png)])
    out = capsys.readouterr().out
    assert code == 1 and png.stat().st_size > 1000
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert "message" in out and "red" in out
