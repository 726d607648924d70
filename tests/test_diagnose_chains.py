"""Diagnoses show the learner's whole call chain of a collective, outermost first as in a traceback, on both sides
of a mismatch, with the line where the ranks' paths part; and a dcp.save on some ranks only is named at the
learner's dcp.save line. Every input is a real run."""

from __future__ import annotations

import inspect
import os
import tempfile

import pytest
import torch
import torch.distributed as dist

import barrierlab as bl

pytestmark = pytest.mark.usefixtures("no_leftovers")

from barrierlab.sites import short_path

HERE = short_path(os.path.abspath(__file__))


def line_of(fn, text: str) -> int:
    """The line number of the first line of ``fn`` containing ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def gather_one(value):
    out = [torch.zeros(1) for _ in range(dist.get_world_size())]
    dist.all_gather(out, value)
    return out


def gather_all(values):
    return [gather_one(v) for v in values]


def gathers_on_rank_0_only():
    values = [torch.ones(1)]
    if dist.get_rank() == 0:
        gather_all(values)


def gathers_or_waits():
    values = [torch.ones(1)]
    if dist.get_rank() == 0:
        gather_all(values)
    else:
        dist.barrier()


def save(step):
    dist.barrier()


def saves_in_a_helper_on_rank_0():
    if dist.get_rank() == 0:
        save(1)


def descend(n):
    if n:
        return descend(n - 1)
    dist.barrier()


def recurses_on_rank_0():
    if dist.get_rank() == 0:
        descend(20)


def leaves_after_the_first_step():
    for step in range(2):
        if dist.get_rank() == 1 and step == 1:
            return
        gather_all([torch.ones(1)])


def dcp_save_on_rank_0(folder):
    import torch.distributed.checkpoint as dcp

    model = torch.nn.Linear(2, 2)
    if dist.get_rank() == 0:
        dcp.save({"model": model.state_dict()}, checkpoint_id=os.path.join(folder, "step-1"))
    dist.barrier()


def place(fn, text: str) -> str:
    return f"{HERE}:{line_of(fn, text)}"


def chain_block(evidence: list[str]) -> list[str]:
    """The traceback lines under the first evidence line that has them."""
    block = next(e for e in evidence if "through this chain (outermost first):" in e)
    return [line.strip() for line in block.splitlines()[1:]]


def test_a_call_through_helpers_shows_the_whole_chain_outermost_first():
    d = bl.run(gathers_on_rank_0_only, 2).diagnosis
    assert d.kind == "only-some-ranks"
    assert f"reached from {place(gathers_on_rank_0_only, 'gather_all(values)')}" in d.headline
    chain = [line for line in chain_block(d.evidence) if "in <listcomp>" not in line]  # a frame before 3.12
    assert [line.split(",")[0] for line in chain] == [
        place(gathers_on_rank_0_only, "gather_all(values)"),
        place(gather_all, "return [gather_one"),
        place(gather_one, "dist.all_gather"),
    ]
    assert chain[1].endswith("in gather_all: return [gather_one(v) for v in values]")


def test_a_mismatch_names_where_the_ranks_paths_part_on_both_sides():
    d = bl.run(gathers_or_waits, 2, timeout=1).diagnosis
    assert d.kind == "mismatched-collectives"
    parted = place(gathers_or_waits, "gather_all(values)")
    assert f"rank 0's all_gather at {place(gather_one, 'dist.all_gather')} (from {parted})" in d.headline
    assert f"rank 1's barrier at {place(gathers_or_waits, 'dist.barrier()')}" in d.headline
    chain = chain_block(d.evidence)
    assert chain[0].startswith(parted) and chain[0].endswith("← the ranks' paths part here")
    assert any(e.startswith("rank 1 called barrier #1 at") for e in d.evidence)


def test_a_call_in_one_helper_reads_as_one_line_with_its_caller():
    d = bl.run(saves_in_a_helper_on_rank_0, 2).diagnosis
    assert d.kind == "only-some-ranks"
    assert (
        f"rank 0 called barrier #1 at {place(save, 'dist.barrier()')}, in save: dist.barrier(), "
        f"called from {place(saves_in_a_helper_on_rank_0, 'save(1)')}, in saves_in_a_helper_on_rank_0: save(1);"
    ) in d.headline
    assert not any("through this chain" in e for e in d.evidence)


def test_deep_recursion_is_cut_to_both_ends_of_its_chain():
    run = bl.run(recurses_on_rank_0, 2)
    d = run.diagnosis
    assert "through 20 more calls" in d.headline
    chain = chain_block(d.evidence)
    assert len(chain) == 7 and chain[3] == "… (16 frames left out)"
    assert chain[0].startswith(place(recurses_on_rank_0, "descend(20)"))
    assert chain[-1].startswith(place(descend, "dist.barrier()"))
    barrier = next(e for e in run[0].events if e.is_collective)
    assert barrier.left_out > 0 and barrier.callers[-1][2] == "recurses_on_rank_0"


def test_a_rank_that_left_early_shows_the_chain_of_its_last_call():
    d = bl.run(leaves_after_the_first_step, 2).diagnosis
    left = next(e for e in d.evidence if e.startswith("rank 1 never made a 2nd collective call"))
    assert "its last was all_gather #1 at" in left and "through this chain" in left
    assert place(leaves_after_the_first_step, "gather_all([torch.ones(1)])") in left


def test_the_ledger_says_where_the_first_differing_calls_came_from():
    text = bl.run(gathers_or_waits, 2, timeout=1).ledger()
    note = next(line for line in text.splitlines() if line.startswith("(#1 came from:"))
    assert f"rank 0's all_gather from ▸ line {line_of(gathers_or_waits, 'gather_all(values)')} →" in note
    assert f"rank 1's barrier from ▸ line {line_of(gathers_or_waits, 'dist.barrier()')})" in note


def test_dcp_save_on_rank_0_is_named_at_the_learners_save_line():
    run = bl.run(dcp_save_on_rank_0, 2, args=(tempfile.mkdtemp(),), timeout=2)
    d = run.diagnosis
    assert d.kind == "checkpoint-on-some-ranks"
    saved = place(dcp_save_on_rank_0, "dcp.save(")
    assert d.headline.startswith(f"dcp.save is a collective every rank must call: rank 0 called it at {saved}")
    assert f"rank 1 made barrier #1 at {place(dcp_save_on_rank_0, 'dist.barrier()')} instead" in d.headline
    assert d.site.line == line_of(dcp_save_on_rank_0, "dcp.save(")
    assert "Call dcp.save on every rank" in d.advice
    assert "gather_object" not in d.headline
    assert "DCP's all_gather @ line" in run.ledger()  # torch's own collective, marked as such
