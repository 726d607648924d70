"""review92d C1, C3, M1 and M4: texts of the diagnosis and the waits that were not true of what ran."""

from __future__ import annotations

import pytest

import barrierlab as bl


def _load_and_cache_examples(rank):
    """transformers' run_glue before PR #1081: the zero-first pair of barriers around the dataset's caching."""
    import torch
    import torch.distributed as dist

    if rank not in [-1, 0]:
        dist.barrier()  # only the first process processes the dataset
    feats = torch.ones(3)
    if rank == 0:
        dist.barrier()
    return feats


def evaluates_on_the_master_only():
    import torch
    import torch.distributed as dist

    rank = dist.get_rank()
    _load_and_cache_examples(rank)
    t = torch.ones(1)
    dist.all_reduce(t)  # "training"
    if rank in [-1, 0]:
        _load_and_cache_examples(rank)  # evaluation, on the master only


@pytest.mark.timeout(120)
def test_c1_the_zero_first_pairing_is_not_blamed_for_a_barrier_one_rank_made_alone():
    run = bl.run(evaluates_on_the_master_only, 3, timeout=2)
    d = run.diagnosis
    text = str(d)
    assert "started at call #1" not in text and "silently paired" not in text, text
    assert "barrier #3" in d.headline and "only" in d.headline, text


def forks_a_child_that_never_returns():
    """review92d c53: the child's barrier never runs; the rank gives up on it and returns."""
    import multiprocessing

    import torch.distributed as dist

    def child():
        dist.barrier()

    p = multiprocessing.get_context("fork").Process(target=child)
    p.start()
    p.join(2)
    alive = p.is_alive()
    if alive:
        p.kill()
        p.join(2)
    return alive


@pytest.mark.timeout(120)
def test_c3_a_finished_run_whose_children_never_returned_is_not_told_all_is_well():
    run = bl.run(forks_a_child_that_never_returns, 2, timeout=2, deadline=15)
    assert run.statuses == ["finished"] * 2, run
    d = run.diagnosis
    assert not d.ok, d
    assert "each forked a child process" in d.headline and "finished all the same" in d.headline, d
