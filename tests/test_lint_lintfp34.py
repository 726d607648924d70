"""lint's false alarms on correct code found by round 50 (session 34), one class per group of tests: a loop over
``enumerate(table[rank], start=1)`` of a table whose rows have equal lengths, a value a helper returns after a
broadcast made it equal, a record's field that is not its rank, and a DDP model's ``.module``. Each correct
program must stay quiet and its buggy neighbour must still be flagged."""

from __future__ import annotations

import textwrap

from barrierlab.lint import lint_source


def findings(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.kind) for f in lint_source(textwrap.dedent(source))]


def line_of(source: str, text: str) -> int:
    """The line of ``source`` that holds ``text`` (its only one)."""
    [line] = [i for i, row in enumerate(source.splitlines(), start=1) if text in row]
    return line


# --------------------------------------------------------------------------- 1: per-rank rows of equal length

TABLE_LOOP = """
import torch
import torch.distributed as dist

STEPS = ((6, 6, 7), {row1})


def worker():
    rank = dist.get_rank()
    for step, n in enumerate(STEPS[rank], start=1):
        t = torch.full((4,), float(n))
        dist.all_reduce(t)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
"""


def test_a_loop_over_a_ranks_row_with_a_start_runs_as_often_on_every_rank() -> None:
    assert findings(TABLE_LOOP.format(row1="(5, 12, 6)")) == []


def test_a_loop_over_a_ranks_row_of_another_length_is_still_flagged() -> None:
    assert findings(TABLE_LOOP.format(row1="(5, 12)")) == [(12, "rank-dependent-loop")]


def test_a_positional_start_counts_like_the_keyword() -> None:
    source = TABLE_LOOP.replace("start=1", "1")
    assert findings(source.format(row1="(5, 12, 6)")) == []
    assert findings(source.format(row1="(5, 12)")) == [(12, "rank-dependent-loop")]


# --------------------------------------------------------------------------- 2: values a collective made equal

RESUME = """
import torch
import torch.distributed as dist


class Loader:
    def __init__(self, path):
        self.path = path
        self._rank = dist.get_rank()

    def load(self):
        found = [self.path.startswith("/") if self._rank == 0 else None]
        dist.broadcast_object_list(found, src=0)
        if found[0]:
            state = {{"step": 3 + self._rank}} if self._rank == 0 else None
            box = [state]
            dist.broadcast_object_list(box, src=0)
            {copy}
            return state["step"], state.get("seen", 0)
        return 0, 0


def worker():
    loader = Loader("/tmp/x")
    start, seen = loader.load()
    for step in range(start + 1, 7):
        dist.all_reduce(torch.ones(2))


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
"""


def test_a_step_read_back_from_the_broadcast_is_the_same_on_every_rank() -> None:
    assert findings(RESUME.format(copy="state = box[0]")) == []


def test_a_step_read_from_the_value_before_the_broadcast_is_still_flagged() -> None:
    assert findings(RESUME.format(copy="pass")) == [(27, "rank-dependent-loop")]


def test_a_return_under_a_test_no_collective_agreed_is_still_flagged() -> None:
    # rank 0 alone looks at the file system: the way the function returns differs between ranks
    source = RESUME.format(copy="state = box[0]").replace(
        'found = [self.path.startswith("/") if self._rank == 0 else None]\n'
        "        dist.broadcast_object_list(found, src=0)\n"
        "        if found[0]:",
        'if self._rank == 0 and self.path.startswith("/"):',
    )
    assert (line_of(source, "dist.all_reduce"), "rank-dependent-loop") in findings(source)


def test_a_value_changed_after_the_broadcast_is_not_equal_any_more() -> None:
    source = RESUME.format(copy="state = box[0]\n            state = {'step': self._rank}")
    assert findings(source) == [(line_of(source, "dist.all_reduce"), "rank-dependent-loop")]


def test_a_return_inside_a_suppress_block_is_not_taken_for_an_agreed_one() -> None:
    # ranks whose file is missing leave the block before its broadcast and return 0: the result differs
    source = """
import contextlib
import torch
import torch.distributed as dist


def resume_step(path):
    with contextlib.suppress(FileNotFoundError):
        step = torch.tensor([torch.load(path)["step"]])
        dist.broadcast(step, src=0)
        return int(step)
    return 0


def worker():
    start = resume_step(f"/tmp/state_{dist.get_rank()}.pt")
    for _ in range(start, 7):
        dist.all_reduce(torch.ones(2))


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
"""
    assert (line_of(source, "dist.all_reduce"), "rank-dependent-loop") in findings(source)


# --------------------------------------------------------------------------- 3: record fields, DDP's .module

RECORD = """
from types import SimpleNamespace

import torch
import torch.distributed as dist


def worker():
    args = SimpleNamespace(rank=dist.get_rank(), epochs={epochs})
    {change}
    for epoch in range(args.epochs):
        dist.all_reduce(torch.ones(2))


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
"""


def test_a_records_field_other_than_the_rank_is_the_same_on_every_rank() -> None:
    assert findings(RECORD.format(epochs="2", change="pass")) == []


def test_a_records_field_given_the_rank_is_still_flagged() -> None:
    assert findings(RECORD.format(epochs="2 + dist.get_rank()", change="pass")) == [(12, "rank-dependent-loop")]


def test_a_record_whose_field_is_set_later_is_judged_as_a_whole() -> None:
    assert findings(RECORD.format(epochs="2", change="args.epochs = args.rank + 1")) == [(12, "rank-dependent-loop")]


def test_a_record_handed_to_a_function_that_sets_its_fields_is_judged_as_a_whole() -> None:
    source = RECORD.format(epochs="2", change="setup(args)") + ("\n\ndef setup(a):\n    a.epochs = a.rank + 1\n")
    assert findings(source) == [(12, "rank-dependent-loop")]


UNWRAP = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x):
        return self.lin(x) * self.scale


def evaluate(model, rank):
    if rank != 0:
        return None
    {unwrap}
    return model(torch.ones(2, 4))


def worker():
    rank = dist.get_rank()
    model = DDP(Net())
    for _ in range(2):
        model(torch.ones(2, 4)).sum().backward()
        evaluate(model, rank)
        dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
"""


def test_rank_zeros_forward_of_the_unwrapped_module_makes_no_collective() -> None:
    assert findings(UNWRAP.format(unwrap="model = model.module")) == []
    assert findings(UNWRAP.format(unwrap="if hasattr(model, 'module'):\n        model = model.module")) == []


def test_rank_zeros_forward_of_the_wrapper_is_still_flagged() -> None:
    assert findings(UNWRAP.format(unwrap="pass")) == [(21, "early-exit")]


def test_an_unwrap_under_a_rank_test_does_not_count() -> None:
    source = UNWRAP.format(unwrap="if rank == 1:\n        model = model.module")
    assert (22, "early-exit") in findings(source)


def test_an_unwrap_after_the_forward_does_not_count() -> None:
    source = UNWRAP.format(unwrap="out = model(torch.ones(2, 4))\n    model = model.module")
    assert (20, "early-exit") in findings(source)
