"""Shared helpers: find the processes the launcher started, and prove none is left."""

from __future__ import annotations

import os
import signal
import sys
import time

import psutil
import pytest

import barrierlab
from barrierlab import _warmstart, launch

# Rank functions defined in test modules are sent by reference, so every rank imports its test module, and
# with it pytest (0.3-0.5 s of CPU per rank, in hundreds of runs). The test process's warm process imports it
# once instead, as a learner's lab would preload a library their own modules use (BARRIERLAB_PRELOAD). Set
# only while that process starts: notebooks under nbval start their kernels from this process too, and run
# as a learner runs them.
_start_warm_process = _warmstart.start


def _start_warm_process_preloading_pytest():
    os.environ["BARRIERLAB_PRELOAD"] = "pytest,psutil"
    try:
        return _start_warm_process()
    finally:
        del os.environ["BARRIERLAB_PRELOAD"]


_warmstart.start = _start_warm_process_preloading_pytest


# A test run started in the background by a shell without job control inherits SIGINT ignored, and Python then
# installs no KeyboardInterrupt handler: every Ctrl-C test would find nothing interrupted (seen when CI was started
# with `cmd &`). The tests need Ctrl-C as a learner's kernel has it; processes they start get the default back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

collect_ignore = ["lint_corpus", "realworld", "browser/notebooks"]  # corpora and notebooks the tests run


def warm_pid() -> int | None:
    return launch._warm.process.pid if launch._warm is not None and launch._warm.alive() else None


def live_ranks() -> list[psutil.Process]:
    """Children of the warm process that are still running (zombies not yet reaped count as gone), but for
    the ranks it forked ahead of time that wait for a run (its pool: they belong to no run)."""
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
            if child.status() != psutil.STATUS_ZOMBIE and not _pooled(child):
                alive.append(child)
        except psutil.NoSuchProcess:
            pass
    return alive


def _pooled(process: psutil.Process) -> bool:
    from barrierlab._contain import POOLED_NAME

    try:
        return process.name() == POOLED_NAME.decode()
    except psutil.Error:
        return False


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
    """The warm process starts with the first test that runs ranks (``bl.run`` starts it when needed), not
    for every session: pure tests (lint, diagnosis rules, plots of recorded data) never pay for torch in a
    second process. Whatever started it, it is stopped at the end."""
    yield
    barrierlab.shutdown()


#: Tests by what they need (``make check`` runs neither browser, torchrun nor slow tests): files whose every
#: test is of a kind; single tests mark themselves.
_MARKED_FILES = {
    "browser": ("tests/browser/",),
    "torchrun": ("tests/test_torchrun.py",),
    "slow": (
        "tests/test_realworld.py",
        "tests/test_containment.py",
        "tests/test_script_runner.py",
        "tests/test_warm_start.py",
        "tests/test_learner_code.py",
        "tests/test_exercises_nb0",
        "tests/test_collection.py",
        "tests/test_straggler_jitter.py",
        "tests/test_scenarios.py",
        "tests/test_first_run.py",
        "tests/notebooks/",
        "notebooks/",
    ),
}


def pytest_collection_modifyitems(config, items):
    root = str(config.rootpath) + "/"
    for item in items:
        path = str(item.path).removeprefix(root)
        for marker, prefixes in _MARKED_FILES.items():
            if path.startswith(prefixes):
                item.add_marker(getattr(pytest.mark, marker))
        if "as_a_script" in item.name:  # plain torchrun on the real-world corpus: the baseline
            item.add_marker(pytest.mark.torchrun)


@pytest.fixture
def no_leftovers():
    """Fails the test if any rank process outlives it."""
    yield
    assert leftover_ranks() == []


def leftover_ranks(seconds: float = 2.0) -> list[int]:
    """The ranks of runs (not the warm process's pool) still running after ``seconds``."""
    left = wait_until_gone([p.pid for p in live_ranks()], seconds)
    # a rank the warm process was forking for its pool a moment ago has taken its pool name since
    return [p for p in left if p in {rank.pid for rank in live_ranks()}]


def _show_unexpected_stream_text() -> None:
    """nbval reports an output stream a stored cell did not have by its name only ("Unexpected output fields:
    {'stderr'}"); add what the stream said to the failure, so a message that reaches a lesson's cell (from the
    kernel, the warm process or a library) can be read in CI's log. Only the failure text changes."""
    try:
        from nbval import plugin
    except ImportError:
        return
    compare = plugin.IPyNbCell.compare_outputs

    def compare_outputs(self, test, ref, skip_compare=None):
        same = compare(self, test, ref, skip_compare)
        if not same:
            stored = {o.get("name") for o in ref if o.get("output_type") == "stream"}
            for output in test:
                if output.get("output_type") == "stream" and output.get("name") not in stored:
                    self.comparison_traceback.append(f"\n{output.get('name')} said:\n{str(output.get('text'))[:4000]}")
        return same

    plugin.IPyNbCell.compare_outputs = compare_outputs


def _retry_kernel_start() -> None:
    """nbval starts one kernel per notebook and has no second try: session 24's fresh-clone CI lost all 26 cells of
    notebook 07 to "Kernel died before replying to kernel_info" at its start (the notebook then passed 26/26
    alone). A kernel that dies while starting is the machine's, not the lesson's: start it again, twice at most,
    saying so on stderr. A kernel that starts and then fails a cell still fails the cell."""
    try:
        from nbval import kernel
    except ImportError:
        return
    start = kernel.start_new_kernel

    def start_new_kernel(*args, **kwargs):
        for attempt in range(3):
            try:
                return start(*args, **kwargs)
            except RuntimeError as error:
                if attempt == 2 or "died" not in str(error):
                    raise
                print(f"nbval: a kernel died while starting ({error}); starting another", file=sys.stderr)
        raise AssertionError("unreachable")

    kernel.start_new_kernel = start_new_kernel


def pytest_configure(config):
    # in the test process only: ranks import this module too (test modules import its helpers), and nbval's
    # own imports (nbformat, jsonschema) cost a rank seconds
    _show_unexpected_stream_text()
    _retry_kernel_start()
