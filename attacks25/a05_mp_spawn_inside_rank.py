"""The deadlock advice (see _deadlock.py) on: torch.multiprocessing.spawn of the DDP tutorial's demo_basic inside each rank (learner/p09_mp_spawn_inside.py)."""

from _deadlock import check

check("p09_mp_spawn_inside.py")
