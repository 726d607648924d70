"""The contract between kernel, warm process and ranks (barrierlab._protocol), tested without starting ranks
(except where a test says so)."""

from __future__ import annotations

import os
import pathlib
import pickle
import re
import time

import pytest
import torch

import barrierlab as bl
from barrierlab import _protocol
from barrierlab._protocol import (
    RANK_CALLS_FN,
    RANK_PHASES,
    RANK_SOURCE,
    Exited,
    Launch,
    Outcome,
    Quit,
    RankFiles,
    Ready,
    RunOptions,
    RunSpec,
    SignalRanks,
    Started,
    Status,
    receive,
    send,
    tidy,
)
from barrierlab.result import RankFailed, RankResult, Run
from barrierlab.stacks import stuck_at
from barrierlab.unpickle import unpickle_isolated

SRC = pathlib.Path(_protocol.__file__).parent


# --- statuses ----------------------------------------------------------------------------------------------
def test_statuses_are_public_strings_with_their_former_display_values():
    assert bl.Status is Status
    assert [s.value for s in Status] == [
        "finished",
        "raised",
        "setup failed",
        "stopped at deadline",
        "exited",
        "killed by signal",
        "ended without a report",
    ]
    assert Status.FINISHED == "finished" and "finished" == Status.FINISHED
    assert str(Status.STOPPED) == "stopped at deadline" and f"{Status.KILLED}" == "killed by signal"
    assert f"{Status.RAISED:>8}" == "  raised"
    assert Status("exited") is Status.EXITED
    assert all(s.description for s in Status)
    assert pickle.loads(pickle.dumps(Status.RAISED)) is Status.RAISED


#: The modules on the three sides of the contract, and the readers of what it carries.
USERS = (
    "launch.py",
    "_warm.py",
    "_rank.py",
    "result.py",
    "stacks.py",
    "torchrun.py",
    "scenarios/__init__.py",
    "__main__.py",
    "diagnose.py",
    "plot.py",
)


def test_no_user_of_the_contract_spells_a_status_or_a_rank_file_name():
    statuses = "|".join(re.escape(f'"{s.value}"') for s in Status)
    pattern = re.compile(rf"{statuses}|rank\{{[^}}]*\}}\.|\"\.(stdout|stderr|outcome|stack|flight|events)\"")
    offenders = [
        f"{name}:{n}"
        for name in USERS
        for n, line in enumerate((SRC / name).read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


# --- messages ----------------------------------------------------------------------------------------------
def _spec() -> RunSpec:
    options = RunOptions(world_size=2, timeout=1.0, deadline=6.0, env=(("A", "1"),))
    return RunSpec(
        run_id="abc",
        run_dir="/tmp/x",
        payload=b"p",
        options=options,
        t0=1.0,
        kernel_pid=1,
        kernel_env=(),
        cwd="/",
        sys_path=(),
    )


def test_messages_travel_through_a_pipe_and_end_with_none():
    read_fd, write_fd = os.pipe()
    messages = [
        Ready(5),
        Launch(_spec()),
        Started("abc", (7, 8)),
        SignalRanks("abc", 10),
        Exited("abc", 1, 8, None, 9),
        Quit(),
    ]
    for message in messages:
        send(write_fd, message)
    os.close(write_fd)
    assert [receive(read_fd) for _ in messages] == messages
    assert receive(read_fd) is None
    os.close(read_fd)


class _NotAMessage:
    def __reduce__(self):
        return (os.getpid, ())


def _frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


@pytest.mark.parametrize(
    "data, words",
    [
        ((1 << 30).to_bytes(4, "big"), "more than any message"),
        (_frame(pickle.dumps(_NotAMessage())), "posix.getpid"),
        (_frame(pickle.dumps(Exited("abc", [1], 8, None, 9))), "not a well-formed message"),
        (_frame(pickle.dumps(Exited("abc", True, 8, None, 9))), "not a well-formed message"),
        (_frame(pickle.dumps(("abc", 1))), "not a well-formed message"),
        (_frame(b"not a pickle"), "not a readable pickle"),
        (_frame(b"x" * 10)[:8], "stopped after"),
    ],
    ids=["huge", "foreign-global", "list-field", "bool-field", "tuple", "garbage", "cut-short"],
)
def test_a_frame_that_is_not_a_message_is_refused_with_a_protocol_error(data, words):
    read_fd, write_fd = os.pipe()
    os.write(write_fd, data)
    with pytest.raises(_protocol.ProtocolError, match=words):
        receive(read_fd, within=0.05)
    os.close(write_fd)
    os.close(read_fd)


def test_specs_and_options_are_frozen():
    spec = _spec()
    with pytest.raises(AttributeError):
        spec.options.timeout = 3  # type: ignore[misc]


# --- rank files and outcomes ------------------------------------------------------------------------------
def test_rank_files_are_named_in_one_place(tmp_path):
    files = RankFiles(str(tmp_path), 3)
    assert os.path.basename(files.stdout) == "rank3.stdout" and os.path.basename(files.outcome) == "rank3.outcome"
    for name in ("rank3.events", "rank5.outcome", "rank5.stdout", "rank12.stack", "diagnosis.claimed"):
        (tmp_path / name).write_text("")
    assert RankFiles.ranks_in(str(tmp_path)) == [3, 5]


def test_an_outcome_round_trips_with_its_pickles(tmp_path):
    outcome = Outcome(
        rank=2,
        world_size=4,
        status=Status.RAISED,
        pid=11,
        t_start=1.5,
        t_end=2.5,
        clock=100.0,
        error_type="builtins.ValueError",
        message="bad",
        traceback="Traceback...\n",
        value=None,
        exception=pickle.dumps(ValueError("bad")),
    )
    path = str(tmp_path / "rank2.outcome")
    outcome.write(path)
    back = Outcome.read(path)
    assert back == outcome and back.status is Status.RAISED
    assert Outcome.read(str(tmp_path / "rank9.outcome")) is None
    assert [p.name for p in tmp_path.iterdir()] == ["rank2.outcome"]  # no temporary file left


def test_an_outcome_never_writes_or_reads_through_a_planted_symlink(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    path = tmp_path / "rank0.outcome"
    path.symlink_to(victim)
    with pytest.raises(ValueError, match="rank0.outcome .* is a symbolic link"):
        Outcome.read(str(path))
    Outcome(rank=0, world_size=1, status=Status.FINISHED, value=b"x").write(str(path))
    assert victim.read_text() == "precious" and not path.is_symlink()


# --- unpickling what ranks return ------------------------------------------------------------------------
class _Exits:
    def __reduce__(self):
        return (os._exit, (7,))


class _Raises:
    def __reduce__(self):
        return (int, ("not a number",))


class _Hangs:
    def __reduce__(self):
        return (time.sleep, (30,))


def test_plain_values_are_unpickled_without_a_child(monkeypatch):
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked for plain data"))
    values = [1, "a", [1.5, None], {"k": (1, 2)}, {1, 2}, ValueError("x"), torch.distributed.DistBackendError("y")]
    back = unpickle_isolated([pickle.dumps(v) for v in values])
    assert [ok for ok, _ in back] == [True] * len(values)
    assert back[3][1] == {"k": (1, 2)} and isinstance(back[6][1], torch.distributed.DistBackendError)


def test_a_value_whose_unpickling_exits_raises_or_hangs_is_an_error_not_a_crash(monkeypatch):
    blobs = [pickle.dumps(v) for v in (_Exits(), torch.ones(3), _Raises(), _Hangs(), [torch.zeros(2)])]
    back = unpickle_isolated(blobs, within=1.0)
    assert back[0] == (False, "unpickling it ended the process (exit code 7)")
    assert back[1][0] and back[1][1].tolist() == [1.0, 1.0, 1.0]
    assert back[2][0] is False and "invalid literal for int()" in back[2][1]
    assert back[3] == (False, "unpickling it took longer than 1 s")
    assert back[4][0] and back[4][1][0].tolist() == [0.0, 0.0]


# --- stacks ------------------------------------------------------------------------------------------------
def _dump(frames: list[tuple[str, int, str]]) -> str:
    return "Current thread 0x0001 (most recent call first):\n" + "".join(
        f'  File "{file}", line {line} in {func}\n' for file, line, func in frames
    )


def test_a_rank_stopped_before_the_function_is_named_by_its_phase():
    torch_file = os.path.join(os.path.dirname(torch.__file__), "distributed", "distributed_c10d.py")
    text = _dump(
        [(torch_file, 10, "init_process_group"), (RANK_SOURCE, 5, "join_the_group"), (RANK_SOURCE, 200, "main")]
    )
    stuck = stuck_at(text)
    assert stuck.site is None and stuck.phase == RANK_PHASES["join_the_group"]
    assert str(stuck) == "while joining the process group (init_process_group)"


def test_a_rank_stopped_in_the_function_is_placed_on_the_learners_line(tmp_path):
    learner = str(tmp_path / "train.py")
    torch_file = os.path.join(os.path.dirname(torch.__file__), "distributed", "c10d_logger.py")
    text = _dump(
        [
            (torch_file, 3, "barrier"),
            (learner, 12, "train"),
            (RANK_SOURCE, 9, RANK_CALLS_FN),
            (RANK_SOURCE, 200, "main"),
        ]
    )
    stuck = stuck_at(text)
    assert stuck.site.file == learner and stuck.site.line == 12 and stuck.call == "barrier"


def test_rank_py_defines_every_step_the_contract_names():
    from barrierlab import _rank

    for name in [*RANK_PHASES, RANK_CALLS_FN]:
        assert callable(getattr(_rank, name)) and getattr(_rank, name).__code__.co_filename == RANK_SOURCE


# --- errors ------------------------------------------------------------------------------------------------
GLOO = (
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:538] Read error "
    "[127.0.0.1]:45678: Connection reset by peer"
)


def _traceback(rank: int, line: int, message: str) -> str:
    return (
        f'Traceback (most recent call last):\n  File "train.py", line {line}, in step\n'
        f"    dist.barrier()\n{message.replace('RANK', str(rank))}\n"
    )


def test_rank_failed_leads_with_the_diagnosis_and_groups_identical_tracebacks():
    ranks = [
        RankResult(
            rank=0,
            status=Status.RAISED,
            exception=ValueError("bad shard 0"),
            traceback=_traceback(0, 7, "ValueError: bad shard 0"),
        )
    ]
    ranks += [
        RankResult(rank=r, status=Status.RAISED, exception=RuntimeError(GLOO), traceback=_traceback(r, 9, GLOO))
        for r in range(1, 16)
    ]
    run = Run(world_size=16, ranks=ranks, elapsed=1.0, timeout=1.0, deadline=6.0)
    text = str(RankFailed(run))
    lines = text.splitlines()
    assert lines[0] == run.diagnosis.headline
    assert "16 of 16 ranks did not finish:" in text
    assert "--- rank 0 raised ValueError ---" in text
    assert "--- ranks 1–15 raised the same RuntimeError (last lines; run[1].traceback has all) ---" in text
    assert text.count("Traceback (most recent call last)") == 1  # one in full, the rest cut
    assert "/__w/" not in text and "gloo/transport" not in text and "45678" not in text


def test_tidy_strips_gloo_build_paths_and_peer_addresses():
    assert tidy(GLOO) == "RuntimeError: Read error: Connection reset by peer"
    assert "/__w/" not in tidy("terminate called at /__w/pytorch/pytorch/third_party/gloo/gloo/x.cc:10 boom")


def test_tensors_are_unpickled_without_a_child_through_torchs_weights_only_loader(monkeypatch):
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked for a tensor"))
    values = [
        torch.arange(6).reshape(2, 3).t(),
        torch.nn.Linear(2, 2).state_dict(),
        torch.ones(2, requires_grad=True),
        torch.nn.Parameter(torch.zeros(1)),
        torch.Size([2, 3]),
        torch.float16,
        torch.device("cpu"),
    ]
    back = unpickle_isolated([pickle.dumps(v) for v in values])
    assert all(ok for ok, _ in back), back
    assert back[0][1].tolist() == [[0, 3], [1, 4], [2, 5]] and back[2][1].requires_grad
    assert back[4][1] == torch.Size([2, 3]) and back[5][1] is torch.float16
