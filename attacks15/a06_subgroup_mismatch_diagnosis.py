"""a06: two ranks call DIFFERENT collectives on the same subgroup (rank 2 barrier, rank 3 all_reduce on
new_group([2, 3])). On the world group the diagnosis says "Different collectives at the same position"; on the
subgroup it says "every rank made the same collective calls" (subgroup with a 2 s timeout) or "did not finish
before the deadline, outside any collective" (subgroup with torch's default timeout), and the ledger says "no
collective calls were recorded", though each rank's events hold the barrier / all_reduce it was stuck in.
Promise 4: diagnoses are right.
Exits 0 if the promise holds, 1 if it breaks."""

import datetime
import sys

import torch
import torch.distributed as dist

import barrierlab as bl


def mismatch_on_a_subgroup_with_timeout():
    group = dist.new_group([2, 3], timeout=datetime.timedelta(seconds=2))
    rank = dist.get_rank()
    if rank == 2:
        dist.barrier(group=group)
    elif rank == 3:
        dist.all_reduce(torch.ones(3), group=group)


def mismatch_on_a_subgroup():
    group = dist.new_group([0, 1])  # torch's default timeout for a new group: the deadline ends it
    rank = dist.get_rank()
    if rank == 0:
        dist.barrier(group=group)
    elif rank == 1:
        dist.all_reduce(torch.ones(3), group=group)


def mismatch_on_the_world():
    if dist.get_rank() == 3:
        dist.all_reduce(torch.ones(3))
    else:
        dist.barrier()


def main() -> int:
    broken = []
    for fn in (mismatch_on_the_world, mismatch_on_a_subgroup_with_timeout, mismatch_on_a_subgroup):
        run = bl.run(fn, 4, timeout=2, deadline=6, live=False)
        headline = run.diagnosis.headline
        ledger = run.ledger()
        print(f"== {fn.__name__}: {run.statuses}\n   {headline[:300]}\n   ledger: {ledger.splitlines()[0]}")
        said_same = "same collective calls" in headline or "outside any collective" in headline
        if said_same or "no collective calls were recorded" in ledger:
            broken.append(
                f"{fn.__name__}: the diagnosis misses the barrier/all_reduce mismatch: {headline[:160]!r}; "
                f"ledger: {ledger.splitlines()[0]!r}"
            )
    for b in broken:
        print("BROKEN:", b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
