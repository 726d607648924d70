"""Containment: every process a rank starts ends with the run, however it detaches; ranks end with the warm
process even while holding the GIL; a warm process that stops answering is replaced; linger returns as
soon as every rank has ended. Wall-clock bounds are generous (a loaded 2-core machine)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest
import torch.distributed as dist
from conftest import leftover_ranks, wait_until_gone, warm_pid

import barrierlab as bl
from barrierlab import _contain, launch
from barrierlab._protocol import run_dir_prefix

pytestmark = pytest.mark.usefixtures("no_leftovers")

IGNORE_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(1000)"


def start_detached(kind: str, folder: str) -> int:
    """Start a process the way ``kind`` says and return its PID (the grandchild's, for a double fork)."""
    if kind == "popen":
        return subprocess.Popen(["sleep", "1000"]).pid
    if kind == "new_session":
        return subprocess.Popen(["sleep", "1000"], start_new_session=True).pid
    if kind == "ignores_sigterm":
        return subprocess.Popen([sys.executable, "-c", IGNORE_TERM], start_new_session=True).pid
    if kind == "double_fork":
        read_fd, write_fd = os.pipe()
        if os.fork() == 0:  # child: new session, fork the daemon, exit
            os.setsid()
            if os.fork() == 0:
                os.write(write_fd, str(os.getpid()).encode())
                os.close(write_fd)
                os.execvp("sleep", ["sleep", "1000"])
            os._exit(0)
        os.close(write_fd)
        pid = int(os.read(read_fd, 32))
        os.close(read_fd)
        return pid
    if kind == "python_fork":  # a forked Python daemon that never execs (no environment marker in /proc)
        read_fd, write_fd = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                os.write(write_fd, str(os.getpid()).encode())
                while True:
                    time.sleep(1)
            os._exit(0)
        os.close(write_fd)
        pid = int(os.read(read_fd, 32))
        os.close(read_fd)
        return pid
    raise ValueError(kind)


KINDS = ["popen", "new_session", "ignores_sigterm", "double_fork", "python_fork"]


def spawn_all(folder):
    return [start_detached(kind, folder) for kind in KINDS]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("ending", ["return", "deadline", "os_exit", "raise"])
def test_every_process_a_rank_starts_ends_with_the_run(tmp_path, ending):
    def fn(folder, ending):
        pids = spawn_all(folder)
        with open(os.path.join(folder, f"pids{dist.get_rank()}"), "w") as f:
            f.write(" ".join(map(str, pids)))
        if ending == "deadline":
            time.sleep(1000)
        if ending == "os_exit":
            os._exit(3)
        if ending == "raise":
            raise RuntimeError("boom")
        return pids

    started = time.monotonic()
    run = bl.run(fn, 2, args=(str(tmp_path), ending), timeout=3, deadline=4)
    assert time.monotonic() - started < 30
    pids = [int(p) for f in tmp_path.glob("pids*") for p in f.read_text().split()]
    assert len(pids) == 2 * len(KINDS), run
    # gone when run() returns (zombies count as gone: they are ended, awaiting their reaper)
    assert wait_until_gone(pids, 0.5) == [], run
    assert (ending == "return") == run.ok


@pytest.mark.timeout(120)
def test_ranks_holding_the_gil_die_with_the_warm_process(tmp_path):
    def hold_the_gil(folder):
        import re

        part = os.path.join(folder, f"part{dist.get_rank()}")  # filled, then renamed: never read half-written
        open(part, "w").write(str(os.getpid()))
        os.replace(part, os.path.join(folder, f"pid{dist.get_rank()}"))
        re.match(r"(a+)+$", "a" * 64 + "b")  # catastrophic backtracking: C code that never releases the GIL

    outcome = []
    thread = threading.Thread(
        target=lambda: _run_catching(outcome, hold_the_gil, 2, args=(str(tmp_path),), timeout=60, deadline=60)
    )
    thread.start()
    give_up = time.monotonic() + 60
    while len(list(tmp_path.glob("pid*"))) < 2 and time.monotonic() < give_up:
        time.sleep(0.05)
    ranks = [int(p.read_text()) for p in tmp_path.glob("pid*")]
    assert len(ranks) == 2
    time.sleep(0.2)
    os.kill(launch._warm.process.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    assert wait_until_gone(ranks, 5.0) == []
    assert time.monotonic() - killed_at < 5.0
    thread.join(30)
    assert not thread.is_alive()
    [run] = outcome  # the run is returned: its ranks were killed with the warm process, and it says so
    assert run.statuses == [bl.Status.KILLED] * 2 and "killed (SIGKILL)" in run.launcher_note, run
    assert bl.run(lambda: dist.get_rank(), 2).values == [0, 1]  # a new warm process


def _run_catching(outcome, *args, **kwargs):
    """Run in a thread, keeping what the call returned or raised."""
    try:
        kwargs.setdefault("timeout", 5)
        outcome.append(bl.run(*args, **kwargs))
    except BaseException as error:  # noqa: B036
        outcome.append(error)


@pytest.mark.timeout(180)
def test_a_stopped_warm_process_is_replaced_within_the_deadline():
    def stop_the_parent():
        if dist.get_rank() == 0:
            os.kill(os.getppid(), signal.SIGSTOP)
        time.sleep(1000)

    bl.warm_up(wait=True)
    stopped = warm_pid()
    started = time.monotonic()
    try:
        run = bl.run(stop_the_parent, 2, timeout=2, deadline=3)
    except Exception as error:  # a LaunchError is acceptable too: what matters is the time and what follows
        run = error
    assert time.monotonic() - started < 3 + 2.5, run
    assert wait_until_gone([stopped], 3.0) == []
    started = time.monotonic()
    assert bl.run(lambda: dist.get_rank(), 2).values == [0, 1]
    assert time.monotonic() - started < 90  # a fresh warm process imports torch; no 120 s hang


def stop_the_warm_process():
    if dist.get_rank() == 0:
        os.kill(os.getppid(), signal.SIGSTOP)
    time.sleep(1000)


@pytest.mark.timeout(180)
def test_a_warm_process_stopped_before_it_preloaded_costs_no_more_than_the_deadline():
    """Found by an attacker: while the warm process had not finished preloading, the kernel waited 30 s for a
    stopped one to confirm the ranks' exits (a 4 s deadline took 32-35 s)."""
    bl.shutdown()
    bl.warm_up()
    launch._warm.wait_ready()
    stopped = warm_pid()
    started = time.monotonic()
    try:
        run = bl.run(stop_the_warm_process, 2, timeout=2, deadline=4)
    except Exception as error:  # noqa: BLE001 - what matters is the time and what follows
        run = error
    assert time.monotonic() - started < 4 + 3, run
    assert wait_until_gone([stopped], 3.0) == []
    assert bl.run(lambda: dist.get_rank(), 2).values == [0, 1]


def finish_but_rank_0_kills_the_warm_process():
    rank = dist.get_rank()
    dist.barrier()
    if rank == 0:
        time.sleep(1.0)  # the other ranks return and exit meanwhile
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(1000)
    return rank * 10


@pytest.mark.timeout(120)
def test_ranks_that_finished_keep_their_values_when_a_rank_kills_the_warm_process():
    bl.run(lambda: 0, 1)
    killed = warm_pid()
    run = bl.run(finish_but_rank_0_kills_the_warm_process, 3, timeout=5, deadline=10)
    assert run.statuses == [bl.Status.KILLED, bl.Status.FINISHED, bl.Status.FINISHED], run
    assert run.values[1:] == [10, 20]
    assert "warm process" in run.launcher_note and "killed" in run.launcher_note
    assert "warm process" in repr(run) and "warm process" in run._repr_html_()
    assert wait_until_gone([killed], 3.0) == []
    assert bl.run(lambda: dist.get_rank(), 2).values == [0, 1] and warm_pid() != killed


@pytest.mark.timeout(180)
def test_a_run_sent_while_the_warm_process_imports_gets_its_whole_deadline():
    """Found by CI on a loaded machine: a short-deadline run sent while the warm process was importing
    torch._dynamo (it answers only between imports) failed with 'stopped answering'. The deadline counts
    from the start of the ranks, so the run gets all of it."""
    from barrierlab import _warm

    bl.shutdown()
    bl.warm_up()
    launch._warm.wait_ready()
    time.sleep(_warm.PRELOAD_AFTER_IDLE + 0.3)  # it has begun importing the lessons' modules
    assert not launch._warm.preloaded, "preloading finished before the run was sent: nothing was tested"
    started = time.monotonic()
    run = bl.run(lambda: dist.get_rank(), 2, timeout=5, deadline=0.5)
    assert run.values == [0, 1], run
    assert time.monotonic() - started < 60


@pytest.mark.timeout(120)
def test_linger_returns_as_soon_as_every_rank_has_ended():
    def one_exits():
        if dist.get_rank() == 1:
            os._exit(3)
        return dist.get_rank()

    started = time.monotonic()
    run = bl.run(one_exits, 3, timeout=30, deadline=30, linger=True)
    assert time.monotonic() - started < 10  # not the 30 s deadline
    assert run.statuses[1] == bl.Status.EXITED and run[0].ok and run[2].ok


def test_pidfds_refuse_a_process_that_is_not_the_one_expected():
    child = subprocess.Popen(["sleep", "30"])
    try:
        start = _contain.start_time(child.pid)
        assert start is not None
        assert _contain.open_pidfd(child.pid, start + 1) is None  # another start time: another process
        fd = _contain.open_pidfd(child.pid, start)
        assert fd is not None
        assert _contain.signal_pidfd(fd, signal.SIGKILL)
        os.close(fd)
        assert child.wait(5) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.timeout(180)
def test_interrupts_at_random_moments_leave_no_rank_behind():
    import random

    rng = random.Random(1)
    main = threading.main_thread().ident
    interrupted = 0
    pids = []
    for _ in range(15):
        timer = threading.Timer(rng.uniform(0.0, 0.3), signal.pthread_kill, (main, signal.SIGINT))
        try:
            try:
                timer.start()
                run = bl.run(lambda: (os.getpid(), time.sleep(1000)), 3, timeout=2, deadline=1.0)
                pids += [r.pid for r in run.ranks]
            finally:
                timer.cancel()
                timer.join()
                time.sleep(0)
        except KeyboardInterrupt:
            interrupted += 1
        assert leftover_ranks() == []
    assert interrupted >= 5
    assert wait_until_gone(pids, 2.0) == []
    me = psutil.Process()
    warm = warm_pid()

    def of_a_run(proc) -> bool:  # a rank or anything a rank started carries the run marker
        try:
            return "BARRIERLAB_RUN_ID" in proc.environ() and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    strays = [p for p in me.children(recursive=True) if p.pid != warm and of_a_run(p)]
    # generous: a warm process an interrupt cut off while it started still imports torch before it sees its
    # closed pipe and exits (seconds on a loaded 2-core machine)
    assert wait_until_gone([p.pid for p in strays], 30.0) == []


FIRST_IMPORT_INTERRUPTED = """
import os, signal, sys, threading, time
import barrierlab as bl

def one():
    return 1

bl.warm_up(wait=True)
assert "torch" not in sys.modules, "this kernel must not have imported torch yet"

def interrupt_while_torch_is_imported():
    while "torch" not in sys.modules:
        time.sleep(0.001)
    time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=interrupt_while_torch_is_imported, daemon=True).start()
try:
    bl.run(one, 2, live=False)
    print("first: returned", flush=True)
except KeyboardInterrupt:
    print("first: interrupted", flush=True)
print("second:", bl.run(one, 2, live=False).values, flush=True)
"""


@pytest.mark.timeout(180)
def test_ctrl_c_during_the_kernels_first_import_of_torch_leaves_the_next_run_working():
    """attack4 A7: the kernel imports torch at its first run; a Ctrl-C in the middle of that import left torch
    half-initialised, and the next run segfaulted the kernel (or raised AttributeError on torch)."""
    kernel = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", FIRST_IMPORT_INTERRUPTED],
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert kernel.returncode == 0, kernel.stderr[-3000:]
    assert "first: interrupted" in kernel.stdout
    assert "second: [1, 1]" in kernel.stdout


HOPPER = """
import os, sys, time
status, new_session = sys.argv[1], sys.argv[2] == "1"
end = time.monotonic() + 10  # bounded: a chain the sweep missed ends by itself
hops = 0
while time.monotonic() < end:
    if os.fork():
        os._exit(0)  # the parent exits: the chain never stays in one PID (a hop takes about a millisecond)
    if new_session:
        os.setsid()  # nor in one process group or session
    hops += 1
    if hops % 25 == 1:
        with open(status + ".tmp", "w") as f:
            f.write(f"{hops} {os.getpid()}")
        os.replace(status + ".tmp", status)
"""


CHAINS = 3


def start_hopping_chains(status: str, new_session: bool) -> str:
    """Rank 0 starts :data:`CHAINS` chains (``status``0, 1, ... say how far each is), lets them hop, returns."""
    if dist.get_rank() == 0:
        for chain in range(CHAINS):
            subprocess.Popen([sys.executable, "-c", HOPPER, f"{status}{chain}", "1" if new_session else "0"])
        give_up = time.monotonic() + 10
        while not all(os.path.exists(f"{status}{c}") for c in range(CHAINS)) and time.monotonic() < give_up:
            time.sleep(0.01)
        time.sleep(0.2)
    return "returned"


@pytest.fixture(params=["cgroup", "no cgroup"])
def containment(request, monkeypatch):
    """Each run in a cgroup of its own (where the system allows it), or as where it does not."""
    if request.param == "no cgroup":
        monkeypatch.setattr(_contain, "make_run_cgroup", lambda name: "")
    elif not _contain.run_cgroups_available():
        pytest.skip(f"no run cgroup here: {_contain.cgroup_unavailable}")
    return request.param


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "new_session",
    [
        False,
        True,
    ],
    ids=["same group", "new session every hop"],
)
def test_a_chain_that_forks_and_exits_every_millisecond_ends_with_the_run(tmp_path, containment, new_session):
    """attack4 A3: the sweep scanned /proc 50 times and gave up; a chain whose every process lives about a
    millisecond outran it and outlived the call and the kernel."""
    statuses = [tmp_path / f"hop{chain}" for chain in range(CHAINS)]
    started = time.monotonic()
    run = bl.run(start_hopping_chains, 2, args=(str(tmp_path / "hop"), new_session), timeout=5, deadline=10)
    assert run.values == ["returned", "returned"]
    assert time.monotonic() - started < 10 + 1
    last = [path.read_text() for path in statuses]
    time.sleep(0.3)
    now = [path.read_text() for path in statuses]
    alive = wait_until_gone([int(text.split()[1]) for text in now], 0.5)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert (now, alive) == (last, [])  # no hop since the call returned, and the last ones are gone


def where_am_i() -> str:
    with open("/proc/self/cgroup") as f:
        return next(line[3:].strip() for line in f if line.startswith("0::"))


def test_every_rank_runs_in_the_runs_cgroup_which_is_removed_after(containment):
    if containment == "no cgroup":
        pytest.skip("only with a cgroup")
    for _ in range(3):  # ranks forked for the run, then ranks from the pool, put into the next run's cgroup ahead
        run = bl.run(where_am_i, 2)
        assert run.values[0] == run.values[1] and "/barrierlab-run-" in run.values[0]
        name = os.path.basename(run.values[0])
        assert not os.path.exists(os.path.join(_contain._cgroup_parent, name))
    prefix = run_dir_prefix(os.getpid(), launch._my_start())
    left = [n for n in os.listdir(_contain._cgroup_parent) if n.startswith(prefix)]
    assert left == [os.path.basename(launch._warm.next_cgroup)]  # only the next run's, made ahead


def dig(top: str, depth: int) -> None:
    """A chain of ``depth`` folders named ``d`` below ``top``, made through descriptors (no long paths)."""
    fd = os.open(top, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)


def test_the_cgroup_walker_goes_down_a_chain_too_deep_for_os_walk_and_removes_it(tmp_path):
    """attack8 a4: ``os.walk`` (recursive in Python 3.11) raised RecursionError out of ``bl.run`` on a rank's chain
    of 1,200 cgroups and left it. The walk is iterative: here on plain folders (cgroupfs removes a cgroup's
    interface files with it; a plain folder must be empty, as the walk leaves it), 3,000 deep (past PATH_MAX)."""
    top = tmp_path / "cg"
    top.mkdir()
    dig(str(top), 3000)
    (top / "wide").mkdir()
    for i in range(50):
        (top / "wide" / f"w{i}").mkdir()
    assert _contain.cgroup_processes(str(top)) == []
    assert _contain.remove_cgroup(str(top)) and not top.exists()
    assert _contain.remove_cgroup(str(top))  # gone already


def test_the_cgroup_walker_is_bounded(tmp_path):
    top = tmp_path / "cg"
    top.mkdir()
    dig(str(top), 100)
    seen = []
    assert _contain.walk_folders(str(top), lambda fd, parent, name: seen.append(name), most=10) is False
    assert seen == [] and top.exists()  # stopped on the way down, nothing visited or removed
    assert _contain.walk_folders(str(top / "missing"), lambda *_: True) is None


def dig_cgroups_below_my_own(depth: int = 1100) -> str:
    with open("/proc/self/cgroup") as f:
        own = next(line[3:].strip() for line in f if line.startswith("0::"))
    dig(_contain._cgroup2_parent(), depth)  # the folder of the rank's own cgroup: the run's
    return os.path.basename(own)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_chain_of_cgroups_a_rank_made_is_removed_and_the_call_returns(containment):
    """attack8 a4, in a real run (making 1,100 cgroups takes the rank about 5 s)."""
    if containment == "no cgroup":
        pytest.skip("only with a cgroup")
    run = bl.run(dig_cgroups_below_my_own, 1, deadline=60).raise_if_failed()
    assert launch._removals.wait(60)  # a tree below the run's cgroup is removed in the background
    assert not os.path.exists(os.path.join(_contain._cgroup_parent, run.values[0]))


def kernel_listening_ports() -> list[int]:
    """In a rank: the ports the kernel (the warm process's parent) listens on at 127.0.0.1, found as any process
    of the same user can (its socket descriptors, /proc/net/tcp): the stores it hosts."""
    with open(f"/proc/{os.getppid()}/stat") as f:
        kernel = int(f.read().rsplit(")", 1)[1].split()[1])
    sockets = set()
    for fd in os.listdir(f"/proc/{kernel}/fd"):
        try:
            target = os.readlink(f"/proc/{kernel}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            sockets.add(target[len("socket:[") : -1])
    ports = []
    with open("/proc/net/tcp") as f:
        for line in f.read().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[1].startswith("0100007F:") and fields[9] in sockets:  # listening
                ports.append(int(fields[1].split(":")[1], 16))
    return ports


def poison_the_other_stores() -> int:
    """attack8 a8: count 1,000 arrivals in every store of the kernel but this run's (the next run's among them)."""
    from datetime import timedelta

    poisoned = 0
    if dist.get_rank() == 0:
        for port in kernel_listening_ports():
            if port != int(os.environ["MASTER_PORT"]):
                store = dist.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=5), wait_for_workers=False)
                store.add("barrierlab/arrived", 1000)
                poisoned += 1
    return poisoned


def freeze_the_other_cgroups() -> int:
    """attack8 a5: freeze every cgroup of this kernel's runs but this run's (the next run's, made ahead)."""
    own = os.path.basename(where_am_i())
    parent = os.path.dirname(_contain._cgroup2_parent())
    prefix = own[: own.rindex("-") + 1]
    frozen = 0
    for name in os.listdir(parent):
        if name.startswith(prefix) and name != own:
            with open(os.path.join(parent, name, "cgroup.freeze"), "w") as f:
                f.write("1")
            frozen += 1
    return frozen


def barrier_and_rank() -> int:
    dist.barrier()
    return dist.get_rank()


@pytest.mark.xfail(
    strict=False,
    reason="open bug: on a loaded 2-core machine the next run's ranks sometimes wait for each other until its "
    "deadline (three full-suite runs in session 10; session 33's fresh-clone CI at load ~15, after 24 passes in a "
    "row at load 7-10 had made it a plain test); alone it passes. Cause not found",
)
@pytest.mark.timeout(120)
def test_a_rank_that_poisons_the_next_runs_store_does_not_stop_the_next_run():
    """The next run's store is made ahead (its ranks, pooled, connect to it as they wait): a rank of this run
    reached it and counted 1,000 arrivals, and the next run's ranks waited for each other until its deadline."""
    bl.run(barrier_and_rank, 2)  # a pool of 2, a store made ahead
    assert bl.run(poison_the_other_stores, 2).values[0] >= 1
    # a generous deadline: the poisoned store held the ranks until it, and a busy machine must not look the same
    run = bl.run(barrier_and_rank, 2, deadline=60)
    assert run.values == [0, 1], run


@pytest.mark.timeout(200)
def test_a_rank_that_freezes_the_next_runs_cgroup_does_not_stop_the_next_run(containment):
    """The next run's cgroup is made ahead (the pooled ranks wait in it): a rank of this run froze it, and the
    next run was stopped at its deadline outside any collective."""
    if containment == "no cgroup":
        pytest.skip("only with a cgroup")
    bl.run(barrier_and_rank, 2)  # a pool of 2, in the cgroup made ahead
    assert bl.run(freeze_the_other_cgroups, 2).values[0] >= 1
    time.sleep(0.5)  # the pool is refilled into the frozen cgroup
    run = bl.run(barrier_and_rank, 2, deadline=60)  # generous: the frozen cgroup held the ranks until it
    assert run.values == [0, 1], (
        run,
        [(r.exit_code, r.signal, r.stderr[-500:], r.pid) for r in run],
        run.launcher_note,
    )
    assert bl.run(barrier_and_rank, 2, deadline=60).values == [0, 1]
