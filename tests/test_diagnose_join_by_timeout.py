"""A timeout a program uses to learn that a rank has left (corpus48's WeNet ``wenet_join``, modelled on
wenet-e2e/wenet issue #2266 and ``wenet/utils/train_utils.py``): a ``monitored_barrier`` with a short timeout on a
group of its own before every step; the rank whose data ran out stops calling it, and the others' caught timeout
makes them stop too. The run is correct: the diagnosis says what the timeout did and that it relies on timing,
without calling it a failure (kind ``ok``). A caught timeout of a rank that did reach the call later is still a
caught error."""

from __future__ import annotations

import datetime
import time

import torch
import torch.distributed as dist

import barrierlab as bl

JOIN = datetime.timedelta(seconds=1)


def steps_until_one_rank_leaves():
    rank = dist.get_rank()
    join = dist.new_group(backend="gloo", timeout=JOIN)
    steps = 2 if rank == 0 else 4  # rank 0's shard runs out first
    done = 0
    for step in range(steps):
        if step:
            try:
                dist.monitored_barrier(group=join, timeout=JOIN)
            except RuntimeError:
                break  # a rank has left: leave the epoch together
        done += 1
    total = torch.tensor([float(done)])
    dist.all_reduce(total)  # every rank meets here after the epoch
    return done


def test_a_caught_timeout_that_tells_the_ranks_one_has_left_is_no_failure_but_relies_on_timing():
    run = bl.run(steps_until_one_rank_leaves, 2, timeout=20, deadline=60)
    assert run.ok and run.values == [2, 2]
    d = run.diagnosis
    assert d.kind == "ok", d
    assert "rank 0 had stopped making monitored_barrier calls of that group (it made 1)" in d.headline
    assert "signal that a rank had left" in d.headline and "relies on timing" in d.headline
    assert "model.join()" in d.headline
    assert "a failed collective ordered nothing" not in d.headline


def late_to_the_group_and_caught():
    join = dist.new_group(backend="gloo", timeout=JOIN)
    if dist.get_rank() == 0:
        time.sleep(2)  # late, not gone: it makes the same call after the others' timeout
    try:
        dist.monitored_barrier(group=join, timeout=JOIN)
    except RuntimeError:
        pass
    dist.barrier()
    return dist.get_rank()


def test_a_caught_timeout_of_a_rank_that_came_late_is_still_a_caught_error():
    run = bl.run(late_to_the_group_and_caught, 2, timeout=20, deadline=60)
    assert run.ok
    d = run.diagnosis
    assert d.kind == "caught-errors", d
    assert "signal that a rank had left" not in d.headline
