"""05 "In practice" and claims N05-23 (review37b): `barrier(async_op=True)` plus work while waiting (05 §8) saves time
when a different rank is slow each step, because each rank's wait hides behind its own prefetch; when the same rank
is slow every step (rank 0 logging each step), that rank is the last to arrive every time and its prefetch comes
after its compute either way, so the step takes as long as before. Each loop's own wall time (between two barriers) in real 4-rank gloo runs; the bounds
are wide (the two savings differ by about a second)."""

from __future__ import annotations

import time

import pytest

import barrierlab as bl

pytestmark = [pytest.mark.usefixtures("no_leftovers"), pytest.mark.slow]


def scenario(steps=4, delay=0.15, base_compute=0.05, prefetch=0.1, overlap=True, slow_rank=None):
    """05 §8's ``overlap_async_barrier.scenario``, with the slow rank fixed when ``slow_rank`` is given (the
    lesson's "On your own" question asks the learner to make that change; the scenario itself stays as shown)."""
    import torch.distributed as dist

    from barrierlab import span

    rank, world_size = dist.get_rank(), dist.get_world_size()
    dist.barrier()
    start = time.perf_counter()  # the loop's own time: not the rank's start (it imports this module)
    for step in range(steps):
        slow = step % world_size if slow_rank is None else slow_rank
        with span("compute"):
            time.sleep(base_compute + (delay if rank == slow else 0.0))
        if overlap:
            work = dist.barrier(async_op=True)
            with span("prefetch next batch", kind="io"):
                time.sleep(prefetch)
            with span(f"wait(barrier#{step + 1})", kind="wait"):
                work.wait()
        else:
            dist.barrier()
            with span("prefetch next batch", kind="io"):
                time.sleep(prefetch)
    dist.barrier()
    return time.perf_counter() - start


def _wall(overlap: bool, slow_rank: int | None) -> float:
    kwargs = dict(steps=6, delay=0.3, base_compute=0.05, prefetch=0.3, overlap=overlap, slow_rank=slow_rank)
    return max(bl.run(scenario, 4, kwargs=kwargs, record=False, live=False).raise_if_failed().values)


def test_overlap_saves_with_a_rotating_straggler_and_not_with_a_fixed_one():
    saved = {}
    for slow_rank in (None, 0):
        saved[slow_rank] = _wall(False, slow_rank) - _wall(True, slow_rank)
    # measured 2026-12-05 (6 steps): rotating 1.2 s hidden, fixed 0.0 s
    assert saved[None] > 0.7, saved
    assert saved[0] < 0.35, saved
