"""One slow rank (or a different one each step) in a loop with a barrier every k steps: everyone waits."""

import time

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import torchrun_main


def scenario(steps=6, slow_rank=1, delay=0.15, barrier_every=1, base_compute=0.05):
    """Each step sleeps ``base_compute`` (plus ``delay`` on the slow rank), then maybe waits at a barrier.

    ``slow_rank="rotate"``: a different rank is slow each step (rank ``step % world_size``).
    ``barrier_every=k``: a barrier after every k-th step; 0 means none in the loop. Either way the loop
    ends with one barrier, the one a real script needs (say, before rank 0 saves the model).
    """
    rank, world_size = dist.get_rank(), dist.get_world_size()
    for step in range(steps):
        slow = step % world_size if slow_rank == "rotate" else slow_rank
        with span("compute"):
            time.sleep(base_compute + (delay if rank == slow else 0.0))  # stands in for forward/backward
        if barrier_every and (step + 1) % barrier_every == 0:
            dist.barrier()
    if not barrier_every or steps % barrier_every:
        dist.barrier()  # everyone is done: the barrier that is needed
    return rank


def predicted_seconds(world_size, steps=6, slow_rank=1, delay=0.15, barrier_every=1, base_compute=0.05,
                      latency=0.001):
    """The cost model: between two barriers the group runs as fast as its slowest rank; each barrier adds latency.

    Time = sum over the stretches between barriers of (the slowest rank's compute in that stretch + latency).
    """
    every = barrier_every or steps
    total = 0.0
    for first in range(0, steps, every):
        stretch = range(first, min(first + every, steps))
        per_rank = []
        for rank in range(world_size):
            slow_steps = sum(rank == (s % world_size if slow_rank == "rotate" else slow_rank) for s in stretch)
            per_rank.append(len(stretch) * base_compute + slow_steps * delay)
        total += max(per_rank) + latency
    return total


if __name__ == "__main__":
    torchrun_main(scenario)
