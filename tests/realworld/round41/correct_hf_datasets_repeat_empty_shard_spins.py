"""Hugging Face datasets: `repeat(None)` stops when a fresh pass over the input yields nothing.

Source: huggingface/datasets PR #8577 ("Fix infinite repetition of empty iterable datasets", 2026-09): "Infinite
repetition currently restarts an empty input indefinitely. For example, a streaming dataset filtered down to zero
rows hangs in `dataset.repeat(None).take(1)` instead of finishing. The same problem affects an empty distributed
shard". `repeat(None).take(n)` after `split_dataset_by_node` is the recipe the datasets maintainers give for
distributed streaming (issue #6623, PR #7198). Modelled: `src/datasets/iterable_dataset.py`
`RepeatExamplesIterable.__iter__` (`while True: ... yield from self.ex_iterable`), `filter`, `take` and
`datasets.distributed.split_dataset_by_node` (example `i` to rank `i % world_size`).

The fix (PR #8577): "Stop infinite repetition when a fresh pass over the input produces no examples." Rank 1's
empty shard now ends `take` with no examples, and both ranks meet in the `all_gather_object` of the scores.
"""

from datetime import timedelta

import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

ROWS = [{"text": "a tall tree", "len": 11}, {"text": "ok", "len": 2},
        {"text": "yes", "len": 3}, {"text": "no", "len": 2}]


class ExamplesIterable:
    def __init__(self, rows):
        self.rows = rows

    def __iter__(self):
        yield from self.rows


class FilteredExamplesIterable:
    def __init__(self, ex_iterable, function):
        self.ex_iterable, self.function = ex_iterable, function

    def __iter__(self):
        for example in self.ex_iterable:
            if self.function(example):
                yield example


class NodeShardedIterable:  # split_dataset_by_node on an iterable dataset
    def __init__(self, ex_iterable, rank, world_size):
        self.ex_iterable, self.rank, self.world_size = ex_iterable, rank, world_size

    def __iter__(self):
        for index, example in enumerate(self.ex_iterable):
            if index % self.world_size == self.rank:
                yield example


class RepeatExamplesIterable:
    def __init__(self, ex_iterable, num_times):
        self.ex_iterable, self.num_times = ex_iterable, num_times

    def __iter__(self):
        repeat_index = 0
        while True:
            if self.num_times is not None and repeat_index >= max(self.num_times, 0):
                break
            produced = False
            for example in self.ex_iterable:
                produced = True
                yield example
            if not produced:  # an empty pass: repeating it can never yield anything
                break
            repeat_index += 1


def take(iterable, n):
    out = []
    for example in iterable:
        out.append(example)
        if len(out) == n:
            break
    return out


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    stream = FilteredExamplesIterable(ExamplesIterable(ROWS), lambda ex: ex["len"] > 5)
    shard = NodeShardedIterable(stream, rank, world_size)
    examples = take(RepeatExamplesIterable(shard, num_times=None), 2)
    scores = [len(ex["text"].split()) for ex in examples]
    gathered = [None] * world_size
    dist.all_gather_object(gathered, scores)
    print(f"[rank {rank}] scores {gathered}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
