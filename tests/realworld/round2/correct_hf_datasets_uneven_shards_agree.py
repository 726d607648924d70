"""Iterable dataset shards of different lengths per rank (``split_dataset_by_node`` on a stream whose
shards do not divide evenly), made safe by agreeing on the end of the epoch through an all_reduce every step.

Source: huggingface/datasets docs/source/use_with_pytorch.mdx ("Distributed": ``split_dataset_by_node``;
with uneven shards some ranks run out first and a collective can hang) and src/datasets/distributed.py; the
stop flag all-reduced with MAX is the recipe used for it (the same one ``torch.distributed.algorithms.Join``
automates). Rank 0 gets 5 batches, rank 1 gets 3.
Correct: every rank runs the loop body, with its all_reduce, the same number of times: the loop's exit is
decided by the reduced flag, which is the same on every rank.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 3.0


def shard_for_rank(rank):
    return iter([torch.full((2, 4), float(i)) for i in range(5 if rank == 0 else 3)])


def worker():
    model = torch.nn.Linear(4, 1)
    batches = shard_for_rank(dist.get_rank())
    steps = 0
    while True:
        batch = next(batches, None)
        finished = torch.tensor(1 if batch is None else 0)
        dist.all_reduce(finished, op=dist.ReduceOp.MAX)
        if finished.item():
            break
        loss = model(batch).sum()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        steps += 1
    return steps


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
