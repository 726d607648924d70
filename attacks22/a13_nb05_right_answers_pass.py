"""attack22 a13: notebook 05's check on RIGHT answers written other ways.

Promise (src/barrierlab/exercises/nb05.py): "Is every rank's write ordered before rank 0's read (a barrier, a
blocking all_reduce, a gather to rank 0, store keys, send/recv ...)?" -- any of them passes. The solution with the
barrier after the write replaced by: reduce to rank 0, gather to rank 0, gather_object, monitored_barrier, a store
counter (every rank adds 1, rank 0 alone polls it), send/recv to rank 0, all_gather_object. Exit 0 if the check
passes every one.
"""

import os
import time

import torch
import torch.distributed as dist
from _h import verdict

import barrierlab as bl
from barrierlab.exercises import nb05


def make(kind):
    def fn(folder, steps=4, delay=0.15, base_compute=0.05):
        rank, world_size = dist.get_rank(), dist.get_world_size()
        loss = 0.0
        for step in range(steps):
            with bl.span("compute"):
                time.sleep(base_compute + (delay if rank == step % world_size else 0.0))
                loss += 1.0 / (step + 1)
        with bl.span("write metrics", kind="io"):
            with open(os.path.join(folder, f"metrics-{rank}.txt"), "w") as f:
                f.write(f"{loss:.4f}\n")
        if kind == "reduce":
            dist.reduce(torch.ones(1), dst=0)
        elif kind == "gather":
            dist.gather(torch.ones(1), [torch.zeros(1) for _ in range(world_size)] if rank == 0 else None, dst=0)
        elif kind == "gather_object":
            dist.gather_object(rank, [None] * world_size if rank == 0 else None, dst=0)
        elif kind == "monitored_barrier":
            dist.monitored_barrier()
        elif kind == "store_counter":
            store = dist.distributed_c10d._get_default_store()
            store.add("written", 1)
            if rank == 0:
                while store.add("written", 0) < world_size:
                    time.sleep(0.002)
        elif kind == "send_recv":
            if rank == 0:
                for r in range(1, world_size):
                    dist.recv(torch.zeros(1), src=r)
            else:
                dist.send(torch.ones(1), dst=0)
        elif kind == "all_gather_object":
            dist.all_gather_object([None] * world_size, loss)
        if rank == 0:
            with bl.span("read metrics", kind="io"):
                return sorted(os.listdir(folder))

    return fn


def main():
    refused = []
    for kind in (
        "reduce",
        "gather",
        "gather_object",
        "monitored_barrier",
        "store_counter",
        "send_recv",
        "all_gather_object",
    ):
        v = nb05.check(make(kind), seed=1)
        print(f"{kind}: {v}")
        if not v:
            refused.append(kind)
    verdict(bool(refused), f"right answers refused: {refused or 'none'}")


if __name__ == "__main__":
    main()
