"""The deadlock advice (see _deadlock.py) on: a dist.barrier() in Dataset.__getitem__ with num_workers=1 (learner/p08_barrier_in_dataloader_worker.py)."""

from _deadlock import check

check("p08_barrier_in_dataloader_worker.py")
