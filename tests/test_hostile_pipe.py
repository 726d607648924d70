"""A rank's code can open the pipes between the kernel and the warm process through /proc/<pid>/fd (same user,
no ptrace needed) and write into them. What it writes is untrusted: a frame is bounded in size and in time, it
loads only the protocol's own messages, and an exit or sweep is believed only when the kernel sees it."""

from __future__ import annotations

import os
import struct
import time

import pytest

import barrierlab as bl
from barrierlab import launch


def _pipe_to_the_kernel() -> str:
    """/proc/<warm>/fd/N: the warm process's write end of the pipe the kernel reads."""
    warm = os.getppid()
    with open(f"/proc/{warm}/stat") as f:
        kernel = int(f.read().rpartition(")")[2].split()[1])
    kernel_reads = set()
    for fd in os.listdir(f"/proc/{kernel}/fd"):
        try:
            with open(f"/proc/{kernel}/fdinfo/{fd}") as f:
                flags = int(f.read().split("flags:")[1].split()[0], 8)
            if flags & 3 == 0:
                kernel_reads.add(os.readlink(f"/proc/{kernel}/fd/{fd}"))
        except OSError:
            pass
    for fd in os.listdir(f"/proc/{warm}/fd"):
        try:
            link = os.readlink(f"/proc/{warm}/fd/{fd}")
            with open(f"/proc/{warm}/fdinfo/{fd}") as f:
                flags = int(f.read().split("flags:")[1].split()[0], 8)
        except OSError:
            continue
        if link.startswith("pipe:") and flags & 1 and link in kernel_reads:
            return f"/proc/{warm}/fd/{fd}"
    raise AssertionError("no pipe to the kernel found")


def write_into_the_kernels_pipe(how: str, rank1_sleeps: float):
    import torch.distributed as dist

    if dist.get_rank() == 1:
        time.sleep(rank1_sleeps)
        return "rank1 done"
    fd = os.open(_pipe_to_the_kernel(), os.O_WRONLY)
    if how == "huge":  # a header claiming 256 MiB, and no body
        os.write(fd, struct.pack(">I", 256 << 20))
    elif how == "half":  # a frame of plausible size that stops half-way
        os.write(fd, struct.pack(">I", 100) + b"\x80\x05")
    elif how == "exec":  # posix._exit(42), by hand
        body = b"cposix\n_exit\n(I42\ntR."
        os.write(fd, struct.pack(">I", len(body)) + body)
    elif how == "forge":
        from barrierlab._protocol import Exited, Started, Swept, send

        run_id = os.environ["BARRIERLAB_RUN_ID"]
        send(fd, Started(run_id, (1, 1), (0, 0), (b"k" * 32, b"k" * 32)))  # keys of its own
        for rank in range(dist.get_world_size()):
            send(fd, Exited(run_id, rank, 1, 0, None))
        send(fd, Swept(run_id, 0))
    os.close(fd)
    time.sleep(0.5)
    return "wrote"


def just_return():
    return "fine"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["huge", "half", "exec"])
def test_bytes_that_are_not_a_message_stop_the_warm_process_not_the_kernel(how):
    started = time.monotonic()
    run = bl.run(write_into_the_kernels_pipe, 2, args=(how, 30.0), timeout=2, deadline=6, live=False)
    assert time.monotonic() - started < 60  # the kernel never blocked on the frame (pytest's timeout guards)
    assert "not a barrierlab message" in run.launcher_note
    assert run.ranks[1].status != "finished"  # it died with the warm process the kernel stopped
    assert bl.run(just_return, 2, live=False).values == ["fine", "fine"]  # the next run has a fresh one


@pytest.mark.timeout(120)
def test_forged_started_exits_and_sweep_change_nothing_of_the_run():
    run = bl.run(write_into_the_kernels_pipe, 2, args=("forge", 2.0), timeout=8, deadline=15, live=False)
    assert run.values == ["wrote", "rank1 done"]
    assert [str(s) for s in run.statuses] == ["finished", "finished"]
    assert launch._warm is not None and launch._warm.alive()


def set_eth0_then_init_the_group(rank, world_size):
    import torch.distributed as dist
    from proc_sockets import beyond_loopback  # tests/proc_sockets.py

    os.environ["GLOO_SOCKET_IFNAME"] = "eth0"  # as a multi-machine script does
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    dist.barrier()
    return beyond_loopback([os.getpid()])


@pytest.mark.timeout(120)
def test_code_that_sets_gloo_socket_ifname_still_listens_only_on_loopback():
    if not os.path.exists("/sys/class/net/eth0"):
        pytest.skip("this machine has no eth0")
    run = bl.run(set_eth0_then_init_the_group, 2, args=(2,), init=False, live=False)
    assert run.values == [[], []], run
    assert "GLOO_SOCKET_IFNAME" in run.ranks[0].stderr and "ignored" in run.ranks[0].stderr


def lower_the_warm_process_file_limit():
    import resource

    import torch.distributed as dist

    if dist.get_rank() == 0:
        warm = os.getppid()
        n = len(os.listdir(f"/proc/{warm}/fd"))
        resource.prlimit(warm, resource.RLIMIT_NOFILE, (n + 1, n + 1))
    return "done"


@pytest.mark.timeout(120)
def test_a_rank_that_lowers_the_warm_process_limits_costs_the_next_run_nothing():
    assert bl.run(lower_the_warm_process_file_limit, 2, live=False).values == ["done", "done"]
    lowered = launch._warm.process.pid
    run = bl.run(just_return, 4, live=False)
    assert run.values == ["fine"] * 4, run
    assert launch._warm.process.pid != lowered  # the run went to a fresh warm process
