"""attack30's repros of run's argument checks and of the diagnosis's source reading (``attacks30/``), fixed: each
exited 1 before its fix. a04: a ``str`` subclass as an ``env`` key passed the checks, and sending the run failed
after the warm process had started. a05: an int ``env`` value too long for ``str()`` raised Python's own
ValueError, not naming ``env``. a06: ``async def`` and generator functions behind ``lru_cache``, ``staticmethod``
or a ``functools.wraps`` decorator ran (every rank raised that a coroutine cannot be pickled). a07-a09:
``diagnose._after_the_loop`` read the source a record names through ``linecache``: a FIFO blocked the kernel and
``barrierlab report`` for ever, a 36 MB text file stayed in ``linecache`` (+420 MiB). Then the unit tests of what
changed, which need no processes."""

from __future__ import annotations

import asyncio
import functools
import linecache
import os
import time
from pathlib import Path

import pytest
from repros import fixed_attacks

import barrierlab as bl
from barrierlab import _files, launch
from barrierlab import diagnose as d
from barrierlab.events import Event

ATTACKS = Path(__file__).resolve().parent.parent / "attacks30"

FIXED = [
    "a04_env_key_str_subclass",
    "a05_env_value_huge_int",
    "a06_async_behind_wrapper",
    "a07_fifo_via_linecache_kernel",
    "a08_report_fifo_via_linecache",
    "a09_big_file_via_linecache_kernel",
]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)


# --- a04, a05: env ------------------------------------------------------------------------------------------
class Name(str):
    pass


@pytest.fixture
def nothing_starts(monkeypatch):
    def must_not_start(*args, **kwargs):
        raise AssertionError("run() started something before checking its arguments")

    for started in ("_pack", "warm_up", "_launch"):
        monkeypatch.setattr(launch, started, must_not_start)


@pytest.mark.parametrize(
    "env, error, said",
    [
        ({Name("FOO"): "1"}, TypeError, "env keys must be plain str"),
        ({"SEED": 10**5000}, ValueError, "env['SEED']"),
    ],
    ids=["str-subclass-key", "int-of-5001-digits"],
)
def test_an_env_that_could_not_be_sent_is_refused_first_naming_env(nothing_starts, env, error, said):
    with pytest.raises(error) as raised:
        bl.run(lambda: 1, 2, env=env)
    assert type(raised.value) is error and said in str(raised.value), raised.value


def test_a_str_subclass_value_is_sent_as_the_plain_str_it_holds():
    class Shout(str):
        def __str__(self):
            return "changed"

    pairs = launch._check_env({"A": Shout("kept"), "B": 7, "C": 0.5})
    assert pairs == (("A", "kept"), ("B", "7"), ("C", "0.5"))
    assert all(type(key) is str and type(value) is str for key, value in pairs)


# --- a06: what fn hands its call on to ----------------------------------------------------------------------
async def train():
    return 1


def steps():
    yield 1


def plain():
    return 1


def logged(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


def run_to_the_end(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return asyncio.run(f(*args, **kwargs))

    return wrapper


def collected(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return [step for step in f(*args, **kwargs)]

    return wrapper


class Holder:
    @staticmethod
    async def step():
        return 1

    @functools.lru_cache  # noqa: B019 - a test of what is refused, not a cache kept
    def cached(self):
        return 1


REFUSED = {
    "lru_cache(async def)": (functools.lru_cache(train), "async"),
    "cache(async def)": (functools.cache(train), "async"),
    "wraps decorator on async def": (logged(train), "async"),
    "staticmethod(async def)": (staticmethod(train), "async"),
    "wraps decorator on a generator function": (logged(steps), "generator"),
    "partial(lru_cache(async def))": (functools.partial(functools.lru_cache(train)), "async"),
    "lru_cache(wraps decorator(async def))": (functools.lru_cache(logged(train)), "async"),
    "a class's staticmethod async def": (Holder.step, "async"),
}
ACCEPTED = {
    "a wraps decorator that runs it with asyncio.run": run_to_the_end(train),
    "a wraps decorator that collects the generator": collected(steps),
    "lru_cache of an ordinary function": functools.lru_cache(plain),
    "wraps decorator on an ordinary function": logged(plain),
    "a bound method under lru_cache": Holder().cached,
    "a lambda calling a pass-through wrapper": lambda: logged(train)(),
    "staticmethod of something not callable": staticmethod(42),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_an_async_or_generator_function_behind_a_pass_through_wrapper_is_refused(nothing_starts, name):
    fn, kind = REFUSED[name]
    with pytest.raises(TypeError) as raised:
        bl.run(fn, 2)
    assert str(raised.value).startswith("fn must be an ordinary function") and kind in str(raised.value)


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_a_wrapper_that_may_run_what_it_wraps_or_wraps_an_ordinary_function_is_accepted(name):
    launch._check_function(ACCEPTED[name])


def test_a_cycle_of_wrapped_functions_ends():
    def a():
        return 1

    def b():
        return 1

    a.__wrapped__, b.__wrapped__ = b, a
    launch._check_function(a)


# --- a07-a09: the loop around a call, read from the source a record names ------------------------------------
LOOP = """def body():
    for i in range(3):
        barrier()
    all_reduce()
"""


def _pair(path: str) -> tuple[Event, Event]:
    looped = Event(rank=0, kind="collective", name="barrier", start=0.0, file=path, line=3, func="body")
    after = Event(rank=1, kind="collective", name="all_reduce", start=0.0, file=path, line=4, func="body")
    return looped, after


def test_the_loop_is_found_in_a_regular_py_file(tmp_path):
    path = tmp_path / "loop.py"
    path.write_text(LOOP)
    assert d._after_the_loop(*_pair(str(path)))


@pytest.mark.timeout(30)
def test_a_fifo_named_as_the_source_is_never_opened(tmp_path):
    fifo = str(tmp_path / "loop.py")
    os.mkfifo(fifo)
    started = time.monotonic()
    assert not d._after_the_loop(*_pair(fifo))
    assert time.monotonic() - started < 5 and fifo not in linecache.cache


def test_a_text_file_named_as_the_source_is_neither_read_nor_kept(tmp_path):
    path = str(tmp_path / "big.txt")
    with open(path, "w") as f:
        f.write(LOOP + "x = 1\n" * 100_000)
    assert not d._after_the_loop(*_pair(path))
    assert path not in linecache.cache and path not in _files._sources
