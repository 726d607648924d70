"""Offline batch inference: prompts cut into fixed-size chunks, fewer chunks than ranks, then scattered (buggy).

Models the split-then-scatter helpers of offline-generation scripts (a ``split_and_scatter_list`` that cuts
the list on rank 0 with ``math.ceil(len(lst) / world_size)`` items per rank and passes the slices to
``dist.scatter_object_list``) and torch's ``scatter_object_list`` (the source rank pickles each element of
``scatter_object_input_list``, broadcasts the largest size, then ``scatter``s one tensor per group member);
accelerate's ``split_between_processes`` docs discuss the same uneven split (3 prompts, 2 GPUs).

3 ranks generate answers for two prompt files, ``dev`` (9 prompts) and ``test`` (4 prompts); the answers are
gathered on rank 0 with ``gather_object``.

Bug: the learner chunks with the usual ``[lst[i:i + n] for i in range(0, len(lst), n)]``, ``n = ceil(len /
world_size)``: 9 prompts give 3 chunks of 3, but 4 prompts give 2 chunks of 2 for 3 ranks. In the ``test``
file the size broadcast inside ``scatter_object_list`` still succeeds, then rank 0's ``scatter`` refuses a list
of 2 tensors for a group of 3 and raises, while ranks 1 and 2 wait in that ``scatter``.
"""
import math
from datetime import timedelta

import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 20

PROMPT_FILES = {
    "dev": [f"dev question {i}" for i in range(9)],
    "test": [f"test question {i}" for i in range(4)],
}


def split_for_ranks(prompts, world_size):
    per_rank = math.ceil(len(prompts) / world_size)
    return [prompts[i:i + per_rank] for i in range(0, len(prompts), per_rank)]  # BUG


def generate(prompt):
    """Stand-in for the model's generation."""
    return prompt.upper()[::-1]


def run_file(name, prompts):
    rank, world = dist.get_rank(), dist.get_world_size()
    chunk = [None]
    dist.scatter_object_list(chunk, split_for_ranks(prompts, world) if rank == 0 else None, src=0)  # WAITS
    answers = [(p, generate(p)) for p in chunk[0]]
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(answers, gathered, dst=0)
    if rank == 0:
        results = [pair for part in gathered for pair in part]
        assert [p for p, _ in results] == prompts, f"{name}: answers out of order or missing"
        print(f"{name}: {len(results)} answers (chunks {[len(part) for part in gathered]})", flush=True)


def worker():
    for name, prompts in PROMPT_FILES.items():
        run_file(name, prompts)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
