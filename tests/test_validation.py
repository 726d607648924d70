"""Every argument of barrierlab.run is checked before anything starts, with a message that names it."""

from __future__ import annotations

import math
import numbers
import os
import re

import pytest
import torch.distributed as dist

import barrierlab as bl
from barrierlab import launch


def rank():
    return dist.get_rank()


def gen():
    yield dist.get_rank()


async def coro():
    return dist.get_rank()


async def agen():
    yield 1


class NotAString:
    pass


class AsyncCall:  # attack8 a11: an object whose __call__ is async (the ranks started, the body never ran)
    async def __call__(self):
        return dist.get_rank()


class GeneratorCall:
    def __call__(self):
        yield dist.get_rank()


# (parameter named in the message, expected error, keyword arguments of run besides fn/world_size)
BAD = [
    # fn
    ("fn", TypeError, dict(fn=42)),
    ("fn", TypeError, dict(fn="rank")),
    ("fn", TypeError, dict(fn=None)),
    ("generator", TypeError, dict(fn=gen)),
    ("async", TypeError, dict(fn=coro)),
    ("async", TypeError, dict(fn=agen)),
    ("async", TypeError, dict(fn=AsyncCall())),
    ("generator", TypeError, dict(fn=GeneratorCall())),
    # world_size
    ("world_size", TypeError, dict(world_size=True)),
    ("world_size", TypeError, dict(world_size=2.0)),
    ("world_size", TypeError, dict(world_size="4")),
    ("world_size", TypeError, dict(world_size=None)),
    ("world_size", ValueError, dict(world_size=0)),
    ("world_size", ValueError, dict(world_size=-3)),
    ("world_size", ValueError, dict(world_size=bl.MAX_WORLD_SIZE + 1)),
    # args
    ("args", TypeError, dict(args=5)),
    ("args", TypeError, dict(args="abc")),
    ("args", TypeError, dict(args=b"abc")),
    ("args", TypeError, dict(args={"a": 1})),
    ("args", TypeError, dict(args={1, 2})),
    ("args", TypeError, dict(args=None)),
    # kwargs
    ("kwargs", TypeError, dict(kwargs=[("a", 1)])),
    ("kwargs", TypeError, dict(kwargs="a=1")),
    ("kwargs", TypeError, dict(kwargs={1: "a"})),
    # timeout
    ("timeout", TypeError, dict(timeout="5")),
    ("timeout", TypeError, dict(timeout=True)),
    ("timeout", TypeError, dict(timeout=[5])),
    ("timeout", ValueError, dict(timeout=0)),
    ("timeout", ValueError, dict(timeout=-1)),
    ("timeout", ValueError, dict(timeout=math.inf)),
    ("timeout", ValueError, dict(timeout=math.nan)),
    ("timeout", ValueError, dict(timeout=1e10)),
    ("timeout", ValueError, dict(timeout=launch.MAX_TIMEOUT + 1)),
    ("timeout", ValueError, dict(timeout=0.0005)),
    # deadline
    ("deadline", TypeError, dict(deadline="10")),
    ("deadline", TypeError, dict(deadline=False)),
    ("deadline", ValueError, dict(deadline=math.inf)),
    ("deadline", ValueError, dict(deadline=1e10)),
    ("deadline", ValueError, dict(deadline=0)),
    ("deadline", ValueError, dict(deadline=-math.inf)),
    ("deadline", ValueError, dict(deadline=math.nan)),
    ("deadline", ValueError, dict(deadline=0.0005)),
    ("deadline", ValueError, dict(deadline=1e-9)),
    # env
    ("env", TypeError, dict(env=["A=1"])),
    ("env", TypeError, dict(env="A=1")),
    ("env", TypeError, dict(env={"A": None})),
    ("env", TypeError, dict(env={"A": True})),
    ("env", TypeError, dict(env={"A": NotAString()})),
    ("env", TypeError, dict(env={"A": b"1"})),
    ("env", TypeError, dict(env={1: "a"})),
    ("env", ValueError, dict(env={"": "a"})),
    ("env", ValueError, dict(env={"A=B": "c"})),
    ("env", ValueError, dict(env={"A": "x\0y"})),
    # threads
    ("threads", TypeError, dict(threads=1.5)),
    ("threads", TypeError, dict(threads="2")),
    ("threads", TypeError, dict(threads=True)),
    ("threads", ValueError, dict(threads=0)),
    ("threads", ValueError, dict(threads=launch.MAX_THREADS + 1)),
    # flags
    ("linger", TypeError, dict(linger="no")),
    ("linger", TypeError, dict(linger=1)),
    ("check", TypeError, dict(check="no")),
    ("check", TypeError, dict(check=None)),
    ("record", TypeError, dict(record="no")),
    ("record", TypeError, dict(record=0)),
]


def _id(case) -> str:
    name, error, call = case
    key, value = next(iter(call.items()))
    shown = f"<function {value.__name__}>" if callable(value) and hasattr(value, "__name__") else repr(value)
    return f"{key}={shown}"[:40]  # no addresses: every test worker must collect the same ids


@pytest.mark.parametrize("name, error, call", BAD, ids=[_id(c) for c in BAD])
def test_a_bad_argument_is_refused_first_with_its_name(name, error, call, monkeypatch):
    def must_not_start(*args, **kwargs):
        raise AssertionError("run() started something before checking its arguments")

    for started in ("_pack", "warm_up", "_launch"):
        monkeypatch.setattr(launch, started, must_not_start)
    call = dict(call)
    fn = call.pop("fn", rank)
    world_size = call.pop("world_size", 2)
    with pytest.raises(error) as raised:
        bl.run(fn, world_size, **call)
    assert type(raised.value) is error
    assert name in str(raised.value)


def test_an_argument_that_cannot_be_pickled_is_refused_before_the_warm_process_is_asked(monkeypatch):
    import threading

    def must_not_start(*args, **kwargs):
        raise AssertionError("run() asked the warm process before checking that every argument can be sent")

    for started in ("warm_up", "_launch", "_WarmProcess"):
        monkeypatch.setattr(launch, started, must_not_start)
    with pytest.raises(TypeError, match=r"args\[1\]"):
        bl.run(rank, 2, args=(1, threading.Lock()))


@pytest.mark.timeout(120)
def test_the_shortest_deadline_accepted_ends_in_a_run_not_in_torch(no_leftovers):
    run = bl.run(rank, 1, timeout=launch.MIN_SECONDS, deadline=launch.MIN_SECONDS)
    assert len(run.ranks) == 1


def test_there_are_enough_cases():
    assert len(BAD) >= 45


def test_none_means_the_documented_default():
    _, _, options = launch.validate(rank, 2, (), None, None, None, None, 1, False, True, False)
    assert options.timeout == bl.DEFAULT_TIMEOUT
    assert options.deadline == bl.DEFAULT_TIMEOUT + launch.DEFAULT_DEADLINE_MARGIN
    _, _, options = launch.validate(rank, 2, [1], {"k": 1}, 2, None, {"A": 1, "B": 0.5}, 1, False, True, False)
    assert options.deadline == 2 + launch.DEFAULT_DEADLINE_MARGIN
    assert options.env == (("A", "1"), ("B", "0.5"))


def test_the_message_says_what_is_allowed():
    with pytest.raises(TypeError, match=r"timeout must be a number of seconds \(int or float\), got '5' \(str\)"):
        bl.run(rank, 2, timeout="5")
    with pytest.raises(ValueError, match=r"deadline must be a positive, finite number of seconds, got inf"):
        bl.run(rank, 2, deadline=math.inf)
    with pytest.raises(ValueError, match=r"deadline must be at most 3605 seconds"):
        bl.run(rank, 2, deadline=1e10)
    with pytest.raises(TypeError, match=r"for one argument write args=\('abc',\)"):
        bl.run(rank, 2, args="abc")
    with pytest.raises(TypeError, match=r"asyncio.run"):
        bl.run(coro, 2)
    with pytest.raises(TypeError, match=r"list\(your_fn\(\)\)"):
        bl.run(gen, 2)


def test_good_arguments_in_their_other_forms_run(no_leftovers):
    run = bl.run(
        lambda a, b, *, c: (a, b, c, __import__("os").environ["N"]),
        2,
        args=[1, 2],
        kwargs={"c": 3},
        timeout=None,
        env={"N": 7},
    )
    assert run.ok and run.values == [(1, 2, 3, "7")] * 2


class FloatRaises:
    """A number whose conversion fails (numbers.Real registered): the error must still name the parameter."""

    def __float__(self):
        raise RuntimeError("no float")

    def __repr__(self):
        raise RuntimeError("no repr")


numbers.Real.register(FloatRaises)

BEYOND_LOOPBACK = [
    {"GLOO_SOCKET_IFNAME": "eth0"},
    {"GLOO_SOCKET_IFNAME": "lo,eth0"},
    {"TP_SOCKET_IFNAME": "eth0"},
    {"NCCL_SOCKET_IFNAME": "eth0"},
    {"MASTER_ADDR": "0.0.0.0"},
    {"MASTER_ADDR": "10.1.2.3"},
]


@pytest.mark.parametrize("name", ["timeout", "deadline"])
def test_a_number_that_cannot_be_converted_is_refused_with_its_name(name, monkeypatch):
    for started in ("_pack", "warm_up", "_launch"):
        monkeypatch.setattr(launch, started, lambda *a, **k: pytest.fail("started before checking"))
    with pytest.raises(TypeError, match=name):
        bl.run(rank, 2, **{name: FloatRaises()})


class IndexRaises:
    """A whole number whose conversion fails (numbers.Integral registered)."""

    def __index__(self):
        raise KeyError("no index")

    def __int__(self):
        raise KeyError("no int")


numbers.Integral.register(IndexRaises)


@pytest.mark.parametrize("name", ["world_size", "threads"])
def test_a_whole_number_that_cannot_be_read_is_refused_with_its_name(name, monkeypatch):
    for started in ("_pack", "warm_up", "_launch"):
        monkeypatch.setattr(launch, started, lambda *a, **k: pytest.fail("started before checking"))
    arguments = {"world_size": 2, name: IndexRaises()}
    with pytest.raises(TypeError, match=rf"^{name} must be a whole number.*could not be read"):
        bl.run(rank, **arguments)


@pytest.mark.parametrize("env", BEYOND_LOOPBACK, ids=lambda env: "=".join(next(iter(env.items()))))
def test_env_that_would_listen_beyond_loopback_is_refused_first(env, monkeypatch):
    for started in ("_pack", "warm_up", "_launch"):
        monkeypatch.setattr(launch, started, lambda *a, **k: pytest.fail("started before checking"))
    (key,) = env
    with pytest.raises(ValueError, match=rf"env\[{key!r}\].*loopback.*torchrun"):
        bl.run(rank, 2, env=env)


def listens_beyond_loopback():
    from proc_sockets import beyond_loopback  # tests/proc_sockets.py

    dist.barrier()
    return beyond_loopback([os.getpid()])


@pytest.mark.timeout(120)
def test_env_naming_loopback_runs_and_nothing_listens_beyond_it(no_leftovers):
    run = bl.run(listens_beyond_loopback, 2, env={"GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "localhost"})
    assert run.ok and run.values == [[], []], run


@pytest.mark.timeout(120)
def test_a_run_asked_to_listen_on_eth0_never_starts():
    with pytest.raises(ValueError, match="GLOO_SOCKET_IFNAME"):
        run = bl.run(listens_beyond_loopback, 2, env={"GLOO_SOCKET_IFNAME": "eth0"})
        pytest.fail(f"the run started; its ranks listened on {run.values}")


@pytest.mark.parametrize("env", [{"X": "\ud800"}, {"\ud800": "1"}], ids=["value", "key"])
def test_env_that_cannot_be_encoded_is_refused_first_by_name(env, monkeypatch):
    for started in ("_pack", "warm_up", "_launch"):
        monkeypatch.setattr(launch, started, lambda *a, **k: pytest.fail("started before checking"))
    (key,) = env
    what = "value" if key == "X" else "key"
    with pytest.raises(ValueError, match=re.escape(f"env[{key!r}]: its {what} cannot be encoded")):
        bl.run(rank, 2, env=env)


def test_an_env_too_large_to_pass_is_refused_first_by_name(monkeypatch):
    """attack9: 20 MB of env= was refused by the pipe's frame limit, a ProtocolError that did not name env."""
    for started in ("_pack", "warm_up", "_launch"):
        monkeypatch.setattr(launch, started, lambda *a, **k: pytest.fail("started before checking"))
    with pytest.raises(ValueError, match=r"env holds 20,971,\d+ bytes"):
        bl.run(rank, 2, env={"BIG": "x" * (20 << 20)})
