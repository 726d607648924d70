"""Four texts review92d found wrong or misleading (C2, M2, M3, M5), on real runs: a correct Join program told a
call "was never waited for" (the call was torch's), a read that found no file told "it may have read it half
written", two ranks that each hit their own timeout told "each waited for the other until rank 1 gave up", and a
rank whose group numbering was off told to check MASTER_ADDR and GLOO_SOCKET_IFNAME."""

from __future__ import annotations

import pytest

import barrierlab as bl


def join_over_uneven_inputs():
    """review92d c51: torch's documented way to train on uneven inputs; Join's all_reduce(async_op=True) hands
    its Work to DDP's reducer, the learner holds no handle."""
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.join import Join
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(torch.nn.Linear(2, 1))
    steps = 2 + dist.get_rank()
    with Join([model]):
        for _ in range(steps):
            model(torch.randn(4, 2)).sum().backward()
    return steps


def never_waited_all_reduce():
    """The learner's own all_reduce(async_op=True), handle dropped: still told."""
    import torch
    import torch.distributed as dist

    dist.all_reduce(torch.ones(1), async_op=True)


@pytest.mark.timeout(180)
def test_a_correct_join_program_is_not_told_torch_s_async_call_was_never_waited_for():
    run = bl.run(join_over_uneven_inputs, 3, timeout=5)
    assert run.statuses == ["finished"] * 3, run
    d = run.diagnosis
    assert d.ok, d
    text = str(d)
    assert "never waited for" not in text and "cannot be trusted" not in text, text
    assert "work.wait()" not in text, text


@pytest.mark.timeout(120)
def test_the_learner_s_own_never_waited_all_reduce_is_still_told():
    run = bl.run(never_waited_all_reduce, 2, timeout=5)
    text = str(run.diagnosis)
    assert "all_reduce(async_op=True)" in text and "was never waited for" in text, text
