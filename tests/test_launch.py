"""barrierlab.run: start N gloo ranks, get back what each did, always within the deadline."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab import Status

EXITED, FINISHED, KILLED, RAISED = Status.EXITED, Status.FINISHED, Status.KILLED, Status.RAISED
SETUP_FAILED, STOPPED = Status.SETUP_FAILED, Status.STOPPED

from conftest import leftover_ranks, wait_until_gone, warm_pid
from proc_sockets import listening

pytestmark = pytest.mark.usefixtures("no_leftovers")


def rank_times(x):
    dist.barrier()
    return dist.get_rank() * x


def only_rank0_waits():
    if dist.get_rank() == 0:
        dist.barrier()


def test_every_rank_runs_after_the_group_is_initialised():
    run = bl.run(lambda: (dist.is_initialized(), dist.get_rank(), dist.get_world_size(), dist.get_backend()), 3)
    assert run.values == [(True, 0, 3, "gloo"), (True, 1, 3, "gloo"), (True, 2, 3, "gloo")]


def test_arguments_and_return_values_travel():
    run = bl.run(rank_times, 4, args=(10,))
    assert run.ok and run.values == [0, 10, 20, 30]


def test_keyword_arguments_and_tensors_travel():
    def scale(t, *, by):
        dist.all_reduce(t)
        return t * by

    run = bl.run(scale, 2, args=(torch.ones(3),), kwargs={"by": 2})
    assert [v.tolist() for v in run.values] == [[4.0, 4.0, 4.0]] * 2


def test_closures_and_lambdas_are_sent_by_value():
    offset = 7

    def closure():
        return dist.get_rank() + offset

    assert bl.run(closure, 2).values == [7, 8]
    assert bl.run(lambda: dist.get_rank() * 2, 2).values == [0, 2]


def test_ranks_default_to_one_intra_op_thread():
    assert bl.run(torch.get_num_threads, 2).values == [1, 1]
    assert bl.run(torch.get_num_threads, 2, threads=2).values == [2, 2]


def test_env_is_set_in_every_rank_and_debug_level_reread():
    def read():
        return os.environ["MY_FLAG"], str(dist.get_debug_level())

    run = bl.run(read, 2, env={"MY_FLAG": "on", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    assert run.values == [("on", "DebugLevel.DETAIL")] * 2


def test_rank_exception_keeps_its_traceback_and_names_the_rank():
    def fail_on_one():
        if dist.get_rank() == 1:
            raise ValueError("bad shard")
        return "ok"

    run = bl.run(fail_on_one, 2)
    assert run.statuses == [FINISHED, RAISED]
    assert isinstance(run[1].exception, ValueError)
    assert 'raise ValueError("bad shard")' in run[1].traceback
    assert "in fail_on_one" in run[1].traceback
    assert "_rank.py" not in run[1].traceback
    with pytest.raises(bl.RankFailed, match=r"rank 1: raised: ValueError: bad shard"):
        run.raise_if_failed()


def test_check_true_raises_with_every_failed_rank():
    with pytest.raises(bl.RankFailed, match="2 of 2 ranks did not finish"):
        bl.run(lambda: 1 / 0, 2, check=True)


def test_deadlock_reports_the_stuck_rank_and_the_barrier_line():
    run = bl.run(only_rank0_waits, 2, timeout=30, deadline=3, linger=True)
    assert run.statuses == [STOPPED, FINISHED], (run, run[1].stderr, run[1].stuck and run[1].stuck.frames)
    assert run.hit_deadline
    stuck = run.stuck[0]
    assert stuck.call == "barrier"
    assert stuck.site.func == "only_rank0_waits"
    assert stuck.site.line == only_rank0_waits.__code__.co_firstlineno + 2
    assert "dist.barrier()" in str(stuck)


def _save_checkpoint():
    dist.barrier()  # the line that waits


def _end_epoch():
    _save_checkpoint()  # the helper's call


def rank0_waits_in_a_helper():
    if dist.get_rank() == 0:
        _end_epoch()  # the rank function's call


def test_a_stuck_rank_is_shown_with_the_chain_of_its_lines_as_the_diagnosis_shows_a_call():
    """run.stuck showed one frame per rank (the barrier's line in the innermost helper): now the learner's
    lines that led there too, outermost first, as the diagnosis's evidence shows a call's chain."""
    run = bl.run(rank0_waits_in_a_helper, 2, timeout=30, deadline=3, linger=True)
    assert run.statuses == [STOPPED, FINISHED], run
    lines = {
        text: f"test_launch.py:{_line_of(fn, text)}"
        for fn, text in (
            (_save_checkpoint, "# the line that waits"),
            (_end_epoch, "# the helper's call"),
            (rank0_waits_in_a_helper, "# the rank function's call"),
        )
    }
    stuck = run.stuck[0]
    assert stuck.call == "barrier" and stuck.site.func == "_save_checkpoint"
    one_line = str(stuck)
    assert lines["# the line that waits"] + ", in _save_checkpoint" in one_line, one_line
    assert "reached from " in one_line and lines["# the rank function's call"] in one_line, one_line
    shown = repr(run.stuck).splitlines()
    assert shown[0].startswith("rank 0: in dist.barrier() at ") and shown[0].endswith(
        lines["# the line that waits"] + ", through this chain (outermost first):"
    ), shown
    assert [line.split(",")[0].endswith(place) for line, place in zip(shown[1:], reversed(lines.values()))] == [
        True
    ] * 3, shown


def _line_of(fn, text: str) -> int:
    import inspect

    source, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(source) if text in line)


def _launch_overhead(world_size: int) -> float:
    """Wall time of a run that does nothing, measured now: what a busy machine adds to any run."""
    started = time.monotonic()
    bl.run(rank_times, world_size, args=(1,))
    return time.monotonic() - started


def test_run_returns_at_its_deadline_not_at_the_timeout():
    overhead = _launch_overhead(4)
    started = time.monotonic()
    run = bl.run(only_rank0_waits, 4, timeout=30, deadline=1.5, linger=True)
    assert run.hit_deadline
    # The promise, deadline + 1 s on a quiet machine, is measured by benchmarks/stress.py (worst overshoot): at
    # load 9.5 on 2 cores this call took 8.9 s (stacks and flight records of a stuck rank are read under load).
    # Here: far from the 30 s the stuck rank's timeout would take, with what the machine adds to any launch.
    assert time.monotonic() - started < 1.5 + 1.0 + 4 * overhead + 5


def test_torch_timeout_surfaces_as_the_ranks_exception():
    run = bl.run(only_rank0_waits, 2, timeout=1, linger=True)
    assert run[0].status == RAISED
    assert "Timed out waiting 1000ms" in str(run[0].exception)


def test_a_peer_that_exits_makes_the_waiting_rank_fail_fast():
    run = bl.run(only_rank0_waits, 2, timeout=30, deadline=20)
    assert run[0].status == RAISED
    assert "Connection closed by peer" in str(run[0].exception) or "reset by peer" in str(run[0].exception)
    assert run.elapsed < 10  # far below the 30 s timeout it would otherwise wait


def test_os_exit_is_reported_with_its_code():
    def leave():
        if dist.get_rank() == 1:
            os._exit(3)

    run = bl.run(leave, 2)
    assert run[1].status == EXITED and run[1].exit_code == 3
    assert "exited with code 3" in run[1].summary()


def test_sys_exit_is_reported_with_its_code():
    run = bl.run(lambda: sys.exit(4), 2)
    assert run.statuses == [EXITED, EXITED] and run[0].exit_code == 4


def test_a_rank_killed_by_a_signal_is_reported_with_the_signal():
    def die():
        if dist.get_rank() == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        dist.barrier()

    run = bl.run(die, 2)
    assert run[0].status == KILLED and run[0].signal == signal.SIGKILL
    assert "SIGKILL" in run[0].summary()
    assert run[1].status == RAISED


def test_output_is_captured_per_rank_including_c_level_writes():
    def talk():
        rank = dist.get_rank()
        print(f"hello from {rank}")
        print(f"warning from {rank}", file=sys.stderr)
        os.write(1, f"raw {rank}\n".encode())

    run = bl.run(talk, 3)
    for rank in range(3):
        assert run[rank].stdout.splitlines() == [f"hello from {rank}", f"raw {rank}"]
        assert run[rank].stderr.strip() == f"warning from {rank}"
    text = run.outputs()
    assert text.index("--- rank 0 ---") < text.index("--- rank 1 ---") < text.index("--- rank 2 ---")


def test_megabytes_of_output_are_cut_to_head_and_tail():
    def flood():
        sys.stdout.write("x" * 80 + "\n") if False else None
        for i in range(100_000):
            print(f"line {i:06d} " + "y" * 40)

    run = bl.run(flood, 1)
    assert run.ok
    assert "line 000000" in run[0].stdout and "line 099999" in run[0].stdout
    assert "bytes of output omitted" in run[0].stdout
    assert len(run[0].stdout) < 100_000


@pytest.mark.parametrize("bad", [0, -1, bl.MAX_WORLD_SIZE + 1])
def test_world_size_out_of_range_says_the_limit(bad):
    with pytest.raises(ValueError, match=f"between 1 and {bl.MAX_WORLD_SIZE}"):
        bl.run(rank_times, bad)


@pytest.mark.parametrize("bad", [2.5, "4", True, None])
def test_world_size_must_be_a_whole_number(bad):
    with pytest.raises(TypeError, match="whole number of ranks"):
        bl.run(rank_times, bad)


def test_fn_must_be_callable():
    with pytest.raises(TypeError, match=r"Pass the function itself"):
        bl.run(rank_times(1) if False else 42, 2)


def test_unpicklable_argument_is_named_with_its_type():
    lock = threading.Lock()
    with pytest.raises(TypeError, match=r"argument 0 \(args\[0\]\) to the ranks: a _thread.lock cannot be pickled"):
        bl.run(lambda _lock: None, 2, args=(lock,))
    assert bl.run(rank_times, 2, args=(1,)).ok  # the next run still works


def test_unpicklable_capture_in_fn_is_named():
    guard = threading.Lock()
    with pytest.raises(
        TypeError,
        match=r"cannot send the variable 'guard' used by .*<lambda> to the ranks: "
        r"a _thread.lock cannot be pickled.*Create that object inside the function",
    ):
        bl.run(lambda: guard.locked(), 2)


def test_unsendable_return_value_names_the_rank_and_type():
    run = bl.run(lambda: threading.Lock(), 2)
    assert run.statuses == [RAISED, RAISED]
    assert "rank 0 finished, but its return value _thread.lock" in str(run[0].exception)


class _BreaksOnArrival:
    def __reduce__(self):
        return (int, ("not a number",))


def test_a_rank_that_fails_before_fn_starts_says_so():
    run = bl.run(lambda x: x, 2, args=(_BreaksOnArrival(),))
    assert run.statuses == [SETUP_FAILED, SETUP_FAILED]
    assert "before your function started" in run[0].summary()
    assert "invalid literal for int()" in run[0].summary()
    assert bl.run(rank_times, 2, args=(1,)).ok


def test_a_rank_that_arrives_late_still_joins_within_a_short_timeout():
    """On a busy machine one rank may still be loading the call seconds after its peers reached
    init_process_group; the 1 s the learner gave the collectives does not bound joining (CI found
    "rank 0 setup failed: RuntimeError: Wait timeout" under load)."""

    def late_on_rank_1():
        time.sleep(3.0 if os.environ["RANK"] == "1" else 0.0)
        return "arrived"

    class ArrivesLate:
        def __reduce__(self):
            return (late_on_rank_1, ())

    for init in (True, False):
        fn = rank_times if init else _tutorial_style
        run = bl.run(fn, 2, args=(ArrivesLate(),), timeout=1, deadline=30, init=init)
        assert run.ok, run.summary()


def _tutorial_style(rank, token):
    dist.init_process_group("gloo")
    dist.barrier()
    return token


def test_launch_after_a_multithreaded_matmul_in_the_parent_does_not_hang():
    torch.set_num_threads(2)
    a = torch.randn(512, 512)
    (a @ a).sum()

    def matmul():
        b = torch.randn(256, 256)
        return float((b @ b).sum() * 0)

    run = bl.run(matmul, 4, deadline=20)
    assert run.ok and run.values == [0.0] * 4


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc")
def test_no_socket_of_a_live_group_listens_beyond_loopback():
    def sockets_of_a_live_rank():
        dist.barrier()
        t = torch.ones(1)
        dist.all_reduce(t)
        found = listening([os.getpid()])
        dist.barrier()
        return found

    run = bl.run(sockets_of_a_live_rank, 4)
    assert run.ok
    for addresses in run.values:
        assert all(a in ("127.0.0.1", "::1") for a in addresses), addresses


@pytest.mark.slow
def test_fifty_mixed_runs_leave_no_process_behind():
    def chaos(kind):
        rank = dist.get_rank()
        if kind == "deadlock" and rank == 0:
            dist.barrier()
        if kind == "raise" and rank == 1:
            raise RuntimeError("boom")
        if kind == "exit" and rank == 1:
            os._exit(2)
        if kind == "sigkill" and rank == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        dist.barrier()
        return os.getpid()

    kinds = ["ok", "deadlock", "raise", "exit", "sigkill"]
    pids = []
    for i in range(50):
        kind = kinds[i % len(kinds)]
        run = bl.run(chaos, 3, args=(kind,), timeout=1, deadline=1.5, linger=(kind == "deadlock"))
        assert (kind == "ok") == run.ok, (kind, run)
        pids += [r.pid for r in run.ranks]
    assert len(set(pids)) == 150
    assert wait_until_gone(pids, 2.0) == []
    assert leftover_ranks(0.0) == []


def test_keyboard_interrupt_stops_every_rank():
    def report_pid_then_hang():
        if dist.get_rank() == 0:
            dist.barrier()

    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt, match="interrupted; all 3 ranks were stopped"):
        bl.run(report_pid_then_hang, 3, timeout=30, deadline=20, linger=True)
    assert time.monotonic() - started < 10  # well before the 20 s deadline
    assert leftover_ranks() == []
    assert bl.run(rank_times, 2, args=(1,)).ok


@pytest.mark.slow
def test_ranks_exit_soon_after_the_kernel_dies(tmp_path):
    script = textwrap.dedent(f"""
        import os, barrierlab as bl, torch.distributed as dist
        def hang():
            # written whole, then renamed: the test never reads a file a rank has created but not yet filled
            part = os.path.join({str(tmp_path)!r}, f"part{{dist.get_rank()}}")
            open(part, "w").write(str(os.getpid()))
            os.replace(part, os.path.join({str(tmp_path)!r}, f"pid{{dist.get_rank()}}"))
            if dist.get_rank() == 0:
                dist.barrier()
        bl.run(hang, 3, timeout=60, deadline=60, linger=True)
    """)
    kernel = subprocess.Popen([sys.executable, "-c", script])
    try:
        give_up = time.monotonic() + 60
        while len(list(tmp_path.glob("pid*"))) < 3 and time.monotonic() < give_up:
            time.sleep(0.05)
        pids = [int(p.read_text()) for p in tmp_path.glob("pid*")]
        assert len(pids) == 3
        kernel.kill()
        kernel.wait()
        assert wait_until_gone(pids, 5.0) == []  # the gloo timeout (60 s) would keep them far longer
    finally:
        if kernel.poll() is None:
            kernel.kill()


@pytest.mark.slow
def test_two_kernels_running_groups_at_once_do_not_collide():
    script = textwrap.dedent("""
        import barrierlab as bl, torch, torch.distributed as dist
        def step():
            t = torch.ones(4)
            for _ in range(20):
                dist.barrier(); dist.all_reduce(t)
            return t[0].item()
        ok = all(bl.run(step, 3).ok for _ in range(6))
        print("OK" if ok else "FAILED")
    """)
    kernels = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [k.communicate(timeout=120)[0].strip() for k in kernels]
    assert outputs == ["OK", "OK"]


def test_run_repr_and_html_show_one_row_per_rank():
    run = bl.run(rank_times, 3, args=(2,))
    text = repr(run)
    assert "3 ranks" in text and "rank 2: finished, returned 4" in text
    html = run._repr_html_()
    assert html.count("<tr><td>") == 3


def test_warm_process_is_reused_between_runs():
    first = warm_pid()
    bl.run(rank_times, 2, args=(1,))
    assert warm_pid() == first


class _ExitsWhenUnpickled:
    def __reduce__(self):
        return (os._exit, (7,))


def test_a_value_whose_unpickling_exits_becomes_that_ranks_error_not_the_kernels_death():
    def give(kind):
        return _ExitsWhenUnpickled() if dist.get_rank() == 1 else torch.ones(2) * kind

    run = bl.run(give, 3, args=(2,))
    assert run.statuses == [FINISHED, RAISED, FINISHED]
    assert "rank 1 returned a value that cannot be unpickled in the notebook" in str(run[1].exception)
    assert "ended the process (exit code 7)" in str(run[1].exception)
    assert run[0].value.tolist() == [2.0, 2.0]
    assert bl.run(rank_times, 2, args=(1,)).ok  # this process is alive and launches again


class _SaysWhenUnpickled:
    def __init__(self):
        self.said = False

    def __setstate__(self, state):
        print("unpickled here", file=sys.stderr, flush=True)
        self.__dict__.update(state, said=True)


def test_the_trial_unpickle_prints_nothing_into_the_kernel(capfd):
    """The trial unpickle runs in a child forked from the kernel, whose fds 1 and 2 lead into the running
    cell: what the value printed there showed up as an unexpected stderr output (nbval failed on it)."""
    from barrierlab.unpickle import NotRebuilt

    run = bl.run(lambda: _SaysWhenUnpickled(), 2)
    # its class restores itself with its own code: shown (repr from the child), never unpickled in the kernel
    assert run.ok and isinstance(run[0].value, NotRebuilt), run
    assert capfd.readouterr().err.count("unpickled here") == 0


def test_plain_values_and_tensors_both_arrive():
    plain = bl.run(lambda: {"loss": [0.1] * 100, "rank": dist.get_rank()}, 4)
    tensors = bl.run(lambda: torch.full((1000,), float(dist.get_rank())), 4)
    assert plain.ok and [v["rank"] for v in plain.values] == [0, 1, 2, 3]
    assert tensors.ok and [v.sum().item() for v in tensors.values] == [0.0, 1000.0, 2000.0, 3000.0]
