"""lint's false alarms on correct code found by round 51 (session 34): a method whose collective a constructor flag
stored on ``self`` switches off, and a loop over ``range(len(share) // k)`` of a share whose length is the same on
every rank. Each correct program must stay quiet and its buggy neighbour must still be flagged."""

from __future__ import annotations

import textwrap

from barrierlab.lint import lint_source


def findings(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.kind) for f in lint_source(textwrap.dedent(source))]


def line_of(source: str, text: str) -> int:
    [line] = [i for i, row in enumerate(textwrap.dedent(source).splitlines(), start=1) if text in row]
    return line


# --------------------------------------------------------------------------- 1: a flag stored on self

METER = """
import torch
import torch.distributed as dist

WORLD_SIZE = 2


class Meter:
    def __init__(self, sync: bool) -> None:
        self.sync = sync
        self.total = torch.zeros(1)

    def update(self, x):
        self.total += x
        if self.sync:
            dist.all_reduce(x)
        return x


def main():
    rank = dist.get_rank()
    meter = Meter({made})
    {extra}
    for x in [torch.ones(1)] * (rank + 1):
        meter.update(x)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    main()
"""


class TestFlagOnSelf:
    def test_flag_off_is_quiet(self):
        assert findings(METER.format(made="sync=False", extra="")) == []

    def test_flag_off_positional_is_quiet(self):
        assert findings(METER.format(made="False", extra="")) == []

    def test_flag_on_is_flagged(self):
        source = METER.format(made="sync=True", extra="")
        assert (line_of(source, "meter.update(x)"), "hidden-collective") in findings(source)

    def test_flag_set_again_on_some_ranks_is_flagged(self):
        source = METER.format(made="sync=False", extra="meter.sync = rank == 0")
        assert (line_of(source, "meter.update(x)"), "hidden-collective") in findings(source)

    def test_flag_from_a_variable_is_flagged(self):
        source = METER.format(made="sync=rank == 0", extra="")
        assert (line_of(source, "meter.update(x)"), "hidden-collective") in findings(source)

    def test_object_rebound_is_flagged(self):
        source = METER.format(made="sync=False", extra="meter = Meter(sync=True) if rank else meter")
        assert (line_of(source, "meter.update(x)"), "hidden-collective") in findings(source)


# --------------------------------------------------------------------------- 2: range(len(share) // k)

STEPS = """
import torch
import torch.distributed as dist

WORLD_SIZE = 2
MICRO = 1


def load():
    return [torch.ones(2) for _ in {source}]


def train(samples):
    rank, dp = dist.get_rank(), dist.get_world_size()
    local = {share}
    steps = len(local) // MICRO
    for i in range(steps):
        dist.all_reduce(local[i])


if __name__ == "__main__":
    dist.init_process_group("gloo")
    train(load())
"""


class TestStepsFromShare:
    def test_round_robin_share_of_unseen_data_is_quiet(self):
        # a loop over `local` itself is quiet too: lint does not guess a length it cannot see
        assert findings(STEPS.format(source='open("data.txt")', share="samples[rank::dp]")) == []

    def test_round_robin_share_of_three_is_flagged(self):
        source = STEPS.format(source="range(3)", share="samples[rank::dp]")
        assert (line_of(source, "dist.all_reduce(local[i])"), "evaluated-count") in findings(source)

    def test_share_growing_with_the_rank_is_flagged(self):
        source = STEPS.format(source='open("data.txt")', share="samples[: rank + 1]")
        assert (line_of(source, "dist.all_reduce(local[i])"), "rank-dependent-loop") in findings(source)

    def test_divided_by_the_rank_is_flagged(self):
        source = STEPS.format(source='open("data.txt")', share="samples[rank::dp]").replace(
            "len(local) // MICRO", "len(local) // (rank + 1)"
        )
        assert (line_of(source, "dist.all_reduce(local[i])"), "rank-dependent-loop") in findings(source)


# --------------------------------------------------------------------------- 2: a generator counted for each rank

GENERATOR_BATCHES = """
import torch
import torch.distributed as dist

WORLD_SIZE = 2
SIZES = {sizes}
BATCH = 8


def batches(rank):
    size = SIZES[rank]
    for start in range(0, size, BATCH):
        n = min(BATCH, size - start)
        yield torch.zeros(n)


def step(batch):
    dist.all_reduce(batch.sum())


def main():
    rank = dist.get_rank()
    for i, batch in enumerate(batches(rank), start=1):
        step(batch)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    main()
"""


class TestGeneratorCountedPerRank:
    def test_same_count_on_every_rank_is_quiet(self):
        assert findings(GENERATOR_BATCHES.format(sizes="(16, 11)")) == []

    def test_counts_differ_is_flagged(self):
        source = GENERATOR_BATCHES.format(sizes="(16, 5)")
        assert (line_of(source, "        step(batch)"), "hidden-collective") in findings(source)

    def test_three_ranks_one_short_is_flagged(self):
        source = GENERATOR_BATCHES.format(sizes="(16, 11, 8)").replace("WORLD_SIZE = 2", "WORLD_SIZE = 3")
        assert (line_of(source, "        step(batch)"), "hidden-collective") in findings(source)

    def test_unknown_world_size_is_flagged(self):
        source = GENERATOR_BATCHES.format(sizes="(16, 11)").replace("WORLD_SIZE = 2\n", "")
        assert (line_of(source, "        step(batch)"), "hidden-collective") in findings(source)
