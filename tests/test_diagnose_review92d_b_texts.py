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


class _SlowToStartPickle:
    """pickle, whose name torch.save reads (its dill check) before it opens the file: the writer's torch.save has
    started and its file is not made yet (the first torch.save of a process spends milliseconds there, which the
    readers of review92d c08 fell into; here long enough that they always do)."""

    def __getattr__(self, name):
        import pickle

        return getattr(pickle, name)

    @property
    def __name__(self):
        import time

        time.sleep(1.5)
        return "pickle"


def save_on_master_then_load_everywhere(folder):
    """review92d c08 (DETR's save_on_master, then torch.load on every rank, no barrier after the save): the
    readers look while rank 0's torch.save is under way, before it has made the file."""
    import os
    import time

    import torch
    import torch.distributed as dist

    path = os.path.join(folder, "ckpt.pth")
    dist.barrier()  # the ranks start together: the readers look 0.5 s into rank 0's 1.5 s before its file exists
    if dist.get_rank() == 0:
        torch.save({"w": torch.arange(1000)}, path, pickle_module=_SlowToStartPickle())
    else:
        time.sleep(0.5)
    return int(torch.load(path)["w"].sum())


@pytest.mark.timeout(120)
def test_readers_that_found_no_file_are_not_told_they_may_have_read_it_half_written(tmp_path):
    run = bl.run(save_on_master_then_load_everywhere, 3, args=(str(tmp_path),), timeout=10, deadline=60)
    d = run.diagnosis
    assert run.statuses == ["finished", "raised", "raised"], run
    assert "FileNotFoundError" in d.headline, d
    assert "half written" not in d.headline, d
    assert (
        "their reads of the file after another rank's write of it: they looked for it before that write had "
        "made it, and found no file" in d.headline
    ), d
    assert "no file yet" in str(d), d


def opposite_group_orders():
    """review92d c25: two groups of ranks [0, 1]; rank 0 waits in g1's barrier, rank 1 in g2's."""
    import datetime

    import torch.distributed as dist

    g1 = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=2))
    g2 = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=2))
    if dist.get_rank() == 0:
        dist.barrier(group=g1)
        dist.barrier(group=g2)
    else:
        dist.barrier(group=g2)
        dist.barrier(group=g1)


@pytest.mark.timeout(120)
def test_two_ranks_that_each_ran_out_their_own_timeout_are_not_told_one_waited_until_the_other_gave_up():
    run = bl.run(opposite_group_orders, 2, timeout=10, deadline=60)
    d = run.diagnosis
    assert d.kind == "different-groups", d
    assert run.statuses == ["raised", "raised"], run
    assert "until each gave up when its own 2 s timeout ran out" in d.headline, d
    assert "until rank 0 gave up" not in d.headline and "until rank 1 gave up" not in d.headline, d


def skip_a_group_then_make_the_next():
    """review92d c45: rank 2 skips new_group([0, 1]); every rank then makes new_group([0, 1, 2])."""
    import datetime

    import torch.distributed as dist

    if dist.get_rank() != 2:
        dist.new_group([0, 1], timeout=datetime.timedelta(seconds=2))
    group = dist.new_group([0, 1, 2], timeout=datetime.timedelta(seconds=2))
    dist.barrier(group=group)


@pytest.mark.timeout(180)
def test_a_rank_whose_group_numbers_were_off_is_not_sent_to_check_the_network():
    run = bl.run(skip_a_group_then_make_the_next, 3, timeout=10, deadline=60)
    d = run.diagnosis
    assert d.kind == "different-group-members", d
    assert "took its number" in d.headline, d
    text = str(d)
    assert "could not reach the store or the others" not in text and "check MASTER_ADDR" not in text, text
    if run[2].status == "raised" and "connectFullMesh" in (run[2].error_message or ""):
        assert any(
            line.startswith("rank 2 raised: the group could not be set up: from new_group #1 on, the ranks' groups")
            and "the cause is that mismatch, not the network" in line
            for line in d.evidence
        ), d
