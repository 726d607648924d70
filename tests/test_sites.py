"""The one answer to "is this the learner's line?" (sites.is_learners), on the real paths of this machine."""

import contextlib
import os
import sysconfig

import torch

import barrierlab
from barrierlab import sites
from barrierlab.scenarios import barrier_on_rank0


def test_the_learners_files_cells_and_code_sent_by_value_are_the_learners():
    assert sites.is_learners(os.path.abspath(__file__))
    assert sites.is_learners("/tmp/ipykernel_123/4567.py")
    assert sites.is_learners(sites.DYNAMIC)


def test_lesson_scenarios_are_the_learners_but_barrierlabs_machinery_is_not():
    assert sites.is_learners(barrier_on_rank0.__file__)
    assert not sites.is_learners(barrierlab.__file__)
    assert not any(sites.is_learners(path) for path in sites.MACHINERY)


def test_torch_the_standard_library_frozen_modules_and_installed_packages_never_are():
    assert not sites.is_learners(torch.distributed.__file__)
    assert not sites.is_learners(contextlib.__file__)
    assert not sites.is_learners("<frozen runpy>")
    purelib = sysconfig.get_paths()["purelib"]
    assert not sites.is_learners(os.path.join(purelib, "lightning", "pytorch", "trainer", "trainer.py"))
    assert not sites.is_learners("/usr/lib/python3/dist-packages/accelerate/accelerator.py")
    assert not sites.is_learners("")


def _indexed_helper():
    return 1


def test_the_code_index_looks_at_a_bounded_number_of_objects():
    """attack9 a9: a million-entry vocabulary among the arguments cost 4.8-9.2 s before the ranks started (one
    Python call per entry); the functions the index is for are still found next to it."""
    import time

    from barrierlab.sites import CodeIndex

    vocab = {f"token{i}": i for i in range(2_000_000)}
    started = time.perf_counter()
    index = CodeIndex().add(((_indexed_helper,), {"vocab": vocab, "rows": [[0.5] * 4] * 500_000}))
    assert time.perf_counter() - started < 1.0  # before: seconds; now a few milliseconds
    assert any(name == "_indexed_helper" for name, *_ in index._entries), index._entries
