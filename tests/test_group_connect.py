"""A rank that fails while gloo connects a group it is making, with no rank gone and the same calls made by all
until then (session 23's CI: round 2's tensor-parallel item on a busy machine). The failure is gloo's; to have it
on demand, rank 0's own torch raises gloo's message after the group was really made (the ranks, recorder,
collector and diagnosis are the real ones): the others go on to calls rank 0 never makes, and the diagnosis must
say that rank 0 failed making the group, not that some ranks skipped a collective."""

from __future__ import annotations

import torch
import torch.distributed as dist

import barrierlab as bl

GLOO_MESSAGE = (
    "Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:546] Connection closed by "
    "peer [127.0.0.1]:40007"
)


def _fails_making_its_first_group():
    import torch.distributed.distributed_c10d as c10d

    if dist.get_rank() == 0:
        made = c10d._new_group_with_tag

        def failing(*args, **kwargs):
            made(*args, **kwargs)
            raise RuntimeError(GLOO_MESSAGE)

        c10d._new_group_with_tag = failing
    dist.new_group([0, 1])
    dist.new_group([2, 3])
    t = torch.ones(1)
    dist.all_reduce(t)
    return t.item()


def _returns_before_the_group():
    if dist.get_rank() == 1:
        return None
    dist.new_group([0, 2])
    return dist.get_rank()


def test_a_rank_that_fails_connecting_a_group_is_named_as_the_cause():
    run = bl.run(_fails_making_its_first_group, 4, timeout=2, deadline=20)
    d = run.diagnosis
    assert d.kind == "rank-failed", str(d)
    assert d.headline.startswith("rank 0 failed in new_group #1 at "), d.headline
    assert "gloo could not connect the new group" in d.headline and "no rank had ended" in d.headline
    assert "never did" not in d.headline and "only some ranks" not in d.headline
    assert d.site is not None and d.site.file.endswith("test_group_connect.py")
    assert "Run it again" in d.advice and "timeout" not in d.advice  # review54 C1, C2: new_group has its own


def test_a_group_a_rank_left_before_is_not_told_as_a_connect_failure():
    run = bl.run(_returns_before_the_group, 3, timeout=2, deadline=20)
    assert "gloo could not connect the new group" not in str(run.diagnosis), str(run.diagnosis)
