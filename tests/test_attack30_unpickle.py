"""attack30's repros of the check of returned values (``attacks30/``, ``src/barrierlab/unpickle.py``): each exited 1
before its fix. a01: a value's code killed the keeper and what it had started outlived the kernel; a02: what the
trial child wrote back was read without a bound (+802 MiB for one value); a03: the trial child's own report of its
cost was believed (a 3 s deadline held 14-34 s). The focused tests below check each fix without a run."""

from __future__ import annotations

import os
import pickle
import struct
import time
from pathlib import Path

import pytest
from conftest import wait_until_gone
from repros import fixed_attacks

from barrierlab import _contain, unpickle

ATTACKS = Path(__file__).resolve().parent.parent / "attacks30"

FIXED = [
    "a01_keeper_killed_by_value",
    "a02_handed_back_stream",
    "a03_forged_cost_slow_load",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)


def colliding_dict_pickle(keys: int) -> bytes:
    """A protocol-4 pickle of a dict of ``keys`` int keys that all hash alike (quadratic to build)."""
    m = 2**61 - 1
    parts = [b"\x80\x04}("]
    for k in range(1, keys + 1):
        b = (k * m).to_bytes(16, "little", signed=True)
        parts.append(b"\x8a" + bytes([len(b)]) + b + b"N")
    parts.append(b"u.")
    return b"".join(parts)


def test_a_forged_cost_report_is_measured_again_by_a_child_that_runs_no_code_of_the_values():
    """The trial child says "0 bytes, 0 s" of a handed-back dict of 40,000 keys hashing alike: the measuring child
    runs out of time, so the kernel never builds it; the verdict comes by the deadline."""
    body = colliding_dict_pickle(40_000)
    blob = b"the rank's pickle"
    verdicts = {blob: ("", (unpickle._HANDED, 0, 0.0, body))}
    started = time.monotonic()
    unpickle._measure_here(verdicts, started + 1.0, 1.0)
    assert time.monotonic() - started < 2.5
    why, handed = verdicts[blob]
    assert handed is None and "took longer than the 1 s it had" in why, why


def test_a_forged_plain_data_report_is_measured_on_the_ranks_pickle():
    """The trial child says the rank's pickle is plain data (so the kernel would unpickle the blob itself): the
    measuring child unpickles it with the plain unpickler, which refuses the value's global."""
    blob = pickle.dumps(time.sleep)
    verdicts = {blob: ("", (unpickle._PLAIN_DATA, 0, 0.0, b""))}
    unpickle._measure_here(verdicts, time.monotonic() + 10.0, 10.0)
    why, handed = verdicts[blob]
    assert handed is None and "cannot be read" in why, why


def test_an_honest_report_is_measured_and_kept():
    big = [float(i) for i in range(200_000)]
    [(ok, value)] = unpickle.unpickle_isolated([pickle.dumps(Returned(big))], within=30)
    assert ok and isinstance(value, Returned) and value.items == big


class Returned:
    def __init__(self, items) -> None:
        self.items = items


def test_a_small_handed_back_value_is_loaded_without_a_measuring_child():
    known = set(__import__("sys").modules)
    small = _handed(Returned([1, 2, 3]), known)
    assert unpickle._loads_at_once(small)
    assert not unpickle._loads_at_once(_handed(Returned([float(i) for i in range(100_000)]), known))
    assert not unpickle._loads_at_once(colliding_dict_pickle(2_000))


def _handed(value, known) -> bytes:
    import io

    buffer = io.BytesIO()
    unpickle._HandingPickler(buffer, known).dump(value)
    return buffer.getvalue()


def test_a_frame_longer_than_a_value_may_be_is_refused_at_its_header():
    frames = unpickle._Frames(1)
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, struct.pack(">BQ", unpickle._HANDED, 1500 << 20) + b"x" * 4096)
        assert not frames.read(0, read_fd)  # the header only: never more than it wants
        assert frames[0].done() and "1500 MiB" in frames[0].refused
        assert frames.held == 0 and frames[0].got == 0
        assert len(os.read(read_fd, 1 << 20)) == 4096  # the body was left unread
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_a_frame_is_read_up_to_its_length_never_past_it():
    frames = unpickle._Frames(1)
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, struct.pack(">BQ", unpickle._FAILED, 5) + b"hello and more")
        while not frames[0].done():
            frames.read(0, read_fd)
        assert frames[0].body() == (b"", b"hello")
        assert os.read(read_fd, 100) == b" and more"
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_run_memory_bounds_the_frames_held_together():
    frames = unpickle._Frames(5)
    for i in range(5):
        frames[i].take(struct.pack(">BQ", unpickle._HANDED, unpickle.FRAME_MOST))
    refused = [i for i in range(5) if frames[i].refused]
    assert refused == [3, 4] and "over 1024 MiB" in frames[3].refused  # three fit in 1 GiB, not a fourth


def keeper_killer(log: str):
    """Run in the trial child: start a daemon in its own session, note its PID, then SIGKILL the keeper."""
    import signal

    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            with open(log, "w") as f:
                f.write(str(os.getpid()))
            time.sleep(300)
            os._exit(0)
        os._exit(0)
    os.waitpid(pid, 0)
    for _ in range(200):
        if os.path.exists(log) and open(log).read():
            break
        time.sleep(0.01)
    os.kill(os.getppid(), signal.SIGKILL)
    return 1


class KillsTheKeeper:
    def __init__(self, log: str) -> None:
        self.log = log

    def __reduce__(self):
        return keeper_killer, (self.log,)


@pytest.mark.timeout(60)
def test_what_a_value_started_ends_even_when_its_code_kills_the_keeper(tmp_path):
    if not _contain.run_cgroups_available():
        pytest.skip(f"no run cgroups here: {_contain.cgroup_unavailable}")
    log = tmp_path / "daemon"
    unpickle.unpickle_isolated([pickle.dumps(KillsTheKeeper(str(log)))], within=10)
    pid = int(log.read_text())
    left = wait_until_gone([pid], 1.0)
    for p in left:
        os.kill(p, 9)
    assert left == []
