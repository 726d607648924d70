"""Shared helpers: find the processes the launcher started, and prove none is left."""

from __future__ import annotations

import time

import psutil
import pytest

import barrierlab
from barrierlab import launch

collect_ignore = ["lint_corpus"]  # snippets for the lint tests, never executed


def warm_pid() -> int | None:
    return launch._warm.process.pid if launch._warm is not None and launch._warm.alive() else None


def live_ranks() -> list[psutil.Process]:
    """Children of the warm process that are still running (zombies not yet reaped count as gone)."""
    pid = warm_pid()
    if pid is None:
        return []
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    alive = []
    for child in children:
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
        except psutil.NoSuchProcess:
            pass
    return alive


def wait_until_gone(pids, seconds: float = 3.0) -> list[int]:
    """The PIDs still running after ``seconds``."""
    give_up = time.monotonic() + seconds
    remaining = [p for p in pids if _running(p)]
    while remaining and time.monotonic() < give_up:
        time.sleep(0.02)
        remaining = [p for p in remaining if _running(p)]
    return remaining


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture(scope="session", autouse=True)
def _warm_pool():
    barrierlab.warm_up(wait=True)
    yield
    barrierlab.shutdown()


@pytest.fixture
def no_leftovers():
    """Fails the test if any rank process outlives it."""
    yield
    assert wait_until_gone([p.pid for p in live_ranks()], 2.0) == []
