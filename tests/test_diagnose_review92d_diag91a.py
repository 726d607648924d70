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


def validates_through_ddp_on_rank_0_only():
    """review92d c06 (pytorch#54059): rank 0's DDP forward broadcasts buffers; rank 1's barrier meets it."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        loss = model(torch.randn(8, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if dist.get_rank() == 0:
        model.eval()
        model(torch.randn(8, 4))
        model.train()
    dist.barrier()


@pytest.mark.timeout(120)
def test_m1_a_rank_that_ended_inside_a_collective_torch_issued_waited_in_it():
    run = bl.run(validates_through_ddp_on_rank_0_only, 2, timeout=2, deadline=30)
    assert run.statuses == ["raised"] * 2, run
    waits = run.waits()
    # rank 0 ended inside DDP's buffer broadcast, after waiting for the whole 2 s timeout
    assert waits.ranks[0].wait > 1.5, waits.table()
    assert waits.ranks[0].idle_fraction > 0.2, waits.table()


def raises_while_a_late_rank_comes_to_the_barrier():
    """review92d c38: rank 1 raises before the barrier; rank 2 reaches it after rank 1 has gone (so it fails at
    once, waiting for nothing) while rank 0 waited there for rank 1."""
    import time

    import torch.distributed as dist

    if dist.get_rank() == 1:
        raise ValueError("bad batch")
    if dist.get_rank() == 2:
        time.sleep(1.0)
    dist.barrier()


@pytest.mark.timeout(120)
def test_m4_a_rank_that_never_came_is_not_replaced_by_the_last_that_did():
    run = bl.run(raises_while_a_late_rank_comes_to_the_barrier, 3, timeout=5)
    waits = run.waits()
    summary = run.summary()
    assert "rank 2 was last to arrive" not in summary and "rank 0 was last" not in summary, summary
    assert waits.last_to_arrive in (None, 1), waits.table()
