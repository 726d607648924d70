"""Real-world items (tests/realworld/): public tutorial, example and library code, and hang bugs reproduced
from public issues, run through ``bl.run`` with recording, through real torchrun, and through lint.

The targets are issue 12's "Done when" criteria. Per item, strictly: a correct item finishes on every
rank (``bl.run`` and torchrun) and lint reports nothing on it; a buggy item ends within its deadline and
never gets the "every rank made the same collective calls" headline. In aggregate over the buggy items:
≥ 85 % of diagnoses name the BUG or WAITS line of the item's own file, and lint flags ≥ 60 % at such a
line (both were xfail until diagnose.py and lint.py met them). Items with ``SELF_INIT`` (the DDP
tutorial's own ``init_process_group`` with MASTER_ADDR/PORT and ``mp.spawn``) run in the lab through
``bl.run(main, N, args=(N,), init=False)``. Every item also runs through barrierlab's script runner
(``barrierlab run item.py -n N``), judged as in the lab.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "realworld"))

import _harness as harness  # noqa: E402

ITEMS = harness.discover()
CORRECT = [i for i in ITEMS if i.kind == "correct"]
BUGGY = [i for i in ITEMS if i.kind == "buggy"]
CORRECT_IN_LAB = CORRECT
BUGGY_IN_LAB = BUGGY
ISOLATED = harness.isolated()
NAME_TARGET, LINT_TARGET = 0.85, 0.60


def ids(items):
    return [i.name for i in items]


@functools.cache
def lab(name: str) -> harness.LabOutcome:
    return harness.run_in_lab(next(i for i in ITEMS if i.name == name))


@functools.cache
def linted(name: str) -> harness.LintOutcome:
    return harness.lint_item(next(i for i in ITEMS if i.name == name))


# --------------------------------------------------------------------------- the corpus itself


def test_corpus_has_enough_items_of_each_kind():
    assert len(CORRECT) >= 15 and len(BUGGY) >= 15
    assert {i.kind for i in ITEMS} == {"correct", "buggy"}


@pytest.mark.parametrize("item", ITEMS, ids=ids(ITEMS))
def test_item_declares_its_source_and_shape(item):
    assert "Source:" in item.docstring, "every item names the public source it models"
    assert item.world_size >= 2 and 0 < item.timeout <= 3
    if item.kind == "buggy":
        assert item.bug_lines and item.wait_lines, "a buggy item marks its # BUG and # WAITS lines"
    else:
        assert not item.bug_lines and not item.wait_lines
    module = harness.module(item)
    assert callable(module.main if item.self_init else module.worker)


# --------------------------------------------------------------------------- bl.run, recording on


class TestInTheLab:
    """``bl.run`` with recording on, as a learner runs the items in a notebook."""

    @pytest.mark.parametrize("item", CORRECT_IN_LAB, ids=ids(CORRECT_IN_LAB))
    def test_correct_item_finishes_on_every_rank_in_the_lab(self, item):
        outcome = lab(item.name)
        assert outcome.ok, f"{item.name}: {outcome.statuses}\n{outcome.diagnosis}"

    @pytest.mark.parametrize("item", BUGGY_IN_LAB, ids=ids(BUGGY_IN_LAB))
    def test_buggy_item_ends_within_its_deadline_in_the_lab(self, item):
        outcome = lab(item.name)
        assert outcome.bounded, f"{item.name} took {outcome.elapsed:.1f} s for a {outcome.deadline:.1f} s deadline"
        assert not outcome.ok

    @pytest.mark.parametrize("item", BUGGY_IN_LAB, ids=ids(BUGGY_IN_LAB))
    def test_buggy_item_never_gets_the_same_collective_calls_headline(self, item):
        outcome = lab(item.name)
        assert harness.SAME_CALLS not in outcome.headline, outcome.diagnosis
        assert outcome.kind != "ok", outcome.diagnosis

    def test_diagnoses_name_the_bug_or_waiting_line_of_most_buggy_items(self):
        named = {i.name: bool(lab(i.name).named_lines) for i in BUGGY_IN_LAB}
        missed = sorted(n for n, ok in named.items() if not ok)
        assert _share(list(named.values())) >= NAME_TARGET, (
            f"named {sum(named.values())}/{len(named)}; missed: {missed}"
        )


# --------------------------------------------------------------------------- barrierlab's script runner


class TestScriptRunner:
    """``barrierlab run item.py``, judged as in the lab."""

    @pytest.mark.parametrize("item", ITEMS, ids=ids(ITEMS))
    def test_item_through_the_script_runner(self, item):
        outcome = harness.run_with_script_runner(item)
        assert outcome.bounded, f"{item.name} took {outcome.elapsed:.1f} s for a {outcome.deadline:.1f} s deadline"
        if item.kind == "correct":
            assert outcome.ok, f"{item.name}: {outcome.statuses}\n{outcome.diagnosis}"
        else:
            assert not outcome.ok, f"{item.name}: the bug did not show through the script runner"
            assert harness.SAME_CALLS not in outcome.headline, outcome.diagnosis


# --------------------------------------------------------------------------- torchrun / mp.spawn


#: What torch prints when it aborts in its own teardown at process exit (a process group's C++ thread still
#: joinable): plain torchrun runs of correct code end this way now and then, with barrierlab nowhere involved.
TORCH_TEARDOWN_ABORT = "terminate called without an active exception"


#: Items run under plain torchrun (or their own ``mp.spawn``) here: one of each way an item starts and ends —
#: torchrun with a correct and a buggy worker, the DDP tutorial's own ``mp.spawn`` correct and buggy. That the
#: whole corpus behaves under plain torchrun as its labels say is the baseline ``benchmarks/realworld.py
#: --tools torchrun`` measures (about 30 s per item on this 2-core machine, a third of the suite's time when
#: every item ran here).
TORCHRUN_SAMPLE = [
    "correct_partitioned_range_loop",
    "buggy_all_reduce_size_mismatch",
    "correct_ddp_tutorial_basic",
    "buggy_ddp_tutorial_barrier_inside_if",
]
TORCHRUN_ITEMS = [i for i in ITEMS if i.name in TORCHRUN_SAMPLE]


class TestPlainTorchrun:
    """The sample under plain torchrun (or the item's own ``mp.spawn``)."""

    def test_the_torchrun_sample_covers_each_way_an_item_starts_and_ends(self):
        assert len(TORCHRUN_ITEMS) == len(TORCHRUN_SAMPLE)
        assert {(i.kind, i.self_init) for i in TORCHRUN_ITEMS} == {(k, s) for k in ("correct", "buggy") for s in (0, 1)}

    @pytest.mark.skipif(
        not ISOLATED, reason="needs root, unshare and ip: torchrun's store would listen on all interfaces"
    )
    @pytest.mark.parametrize("item", TORCHRUN_ITEMS, ids=ids(TORCHRUN_ITEMS))
    def test_item_as_a_script(self, item):
        for _attempt in range(3):  # a correct item gets another go only after torch's own teardown abort
            outcome = harness.run_as_script(item)
            if item.kind != "correct" or outcome.returncode == 0 or TORCH_TEARDOWN_ABORT not in outcome.output:
                break
        assert outcome.bounded, f"{item.name} was still running after {harness.SCRIPT_DEADLINE:.0f} s"
        if item.kind == "correct":
            assert outcome.returncode == 0, outcome.output[-3000:]
        else:
            assert outcome.returncode != 0, f"the bug did not show under torchrun:\n{outcome.output[-3000:]}"


# --------------------------------------------------------------------------- lint


@pytest.mark.parametrize("item", CORRECT, ids=ids(CORRECT))
def test_lint_reports_nothing_on_a_correct_item(item):
    assert linted(item.name).findings == [], linted(item.name).text


# --------------------------------------------------------------------------- aggregate targets


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags)


def test_lint_flags_most_buggy_items_at_the_bug_or_waiting_line():
    flagged = {i.name: bool(linted(i.name).flagged_lines) for i in BUGGY}
    missed = sorted(n for n, ok in flagged.items() if not ok)
    share = _share(list(flagged.values()))
    assert share >= LINT_TARGET, f"flagged {sum(flagged.values())}/{len(flagged)}; missed: {missed}"


# --------------------------------------------------------------------------- round 2 (tests/realworld/round2/)
# Items written for issue 20 from public code by someone who had not read the items above, run by
# realworld/round2/_round2.py with the same judges (its folder on the path, never the stand-ins; an item's
# REQUIRES libraries must be installed, else it is skipped). The per-item specifications above apply as they
# are, and so do issue 20's "Done when" targets for this round (benchmarks/realworld.py prints the figures).

sys.path.insert(0, str(Path(__file__).parent / "realworld" / "round2"))

import _round2 as round2  # noqa: E402

ROUND2 = round2.discover()
ROUND2_NAME_TARGET, ROUND2_LINT_TARGET = 0.90, 0.75


def _round2_params(kind: str | None = None):
    return [pytest.param(i, id=i.name) for i in ROUND2 if kind is None or i.kind == kind]


def _needs_libraries(item) -> None:
    absent = round2.missing(item)
    if absent:
        pytest.skip(f"{item.name} needs {', '.join(absent)} installed (REQUIRES)")
    round2.use_path(item.path.parent)  # the real packages, not the first corpus's stand-ins
    for name in round2.requires(item):
        pytest.importorskip(name)


#: What the diagnosis says when gloo failed to connect a group before any bug was reached (rule_group_connect_failed).
CONNECT_FAILED = "gloo could not connect the new group"


@functools.cache
def lab2(name: str) -> harness.LabOutcome:
    """The item's run in the lab; run once more when gloo failed to connect a group before the item's bug was
    reached (session 23's CI: the tensor-parallel item's rank 0 failed in new_group #1 on a busy machine, 1 run
    in 75 under load): that run measured gloo, not the diagnosis of the bug."""
    item = next(i for i in ROUND2 if i.name == name)
    outcome = round2.run_in_lab(item)
    if CONNECT_FAILED in outcome.headline and not outcome.named_lines:
        outcome = round2.run_in_lab(item)
    return outcome


def _available(kind: str):
    return [i for i in ROUND2 if i.kind == kind and not round2.missing(i)]


def test_round2_has_at_least_20_items_half_of_them_correct():
    assert len(ROUND2) >= 20 and 2 * sum(i.kind == "correct" for i in ROUND2) >= len(ROUND2)


@pytest.mark.parametrize("item", _round2_params())
def test_round2_item_declares_its_source_and_shape(item):
    assert "Source:" in item.docstring, "every item names the public source it models"
    assert item.world_size >= 2 and 0 < item.timeout <= 3
    if item.kind == "buggy":
        assert item.bug_lines and item.wait_lines, "a buggy item marks its # BUG and # WAITS lines"
    else:
        assert not item.bug_lines and not item.wait_lines
    functions = {n.name for n in ast.parse(item.path.read_text()).body if isinstance(n, ast.FunctionDef)}
    assert ("main" if item.self_init else "worker") in functions


#: Round 2 under plain torchrun here: a correct subgroup item and a buggy one; the rest is
#: ``benchmarks/realworld.py --folder tests/realworld/round2 --tools torchrun``.
ROUND2_TORCHRUN_SAMPLE = {"correct_megatron_tp_dp_groups", "buggy_tp_rank0_all_reduce_in_tp_group"}


def test_round2_lint_reports_nothing_on_correct_items():
    noisy = {i.name: round2.lint_item(i).text for i in ROUND2 if i.kind == "correct" and round2.lint_item(i).findings}
    assert not noisy, noisy


def test_round2_lint_flags_75_percent_of_buggy_items():
    flagged = {i.name: bool(round2.lint_item(i).flagged_lines) for i in ROUND2 if i.kind == "buggy"}
    missed = sorted(n for n, ok in flagged.items() if not ok)
    assert _share(list(flagged.values())) >= ROUND2_LINT_TARGET, (
        f"flagged {sum(flagged.values())}/{len(flagged)}: {missed}"
    )


class TestRound2InTheLab:
    """Round 2 through ``bl.run`` (the lab runs are cached per worker)."""

    @pytest.mark.parametrize("item", _round2_params("correct"))
    def test_round2_correct_item_finishes_on_every_rank_in_the_lab(self, item):
        _needs_libraries(item)
        outcome = lab2(item.name)
        assert outcome.ok, f"{item.name}: {outcome.statuses}\n{outcome.diagnosis}"

    @pytest.mark.parametrize("item", _round2_params("buggy"))
    def test_round2_buggy_item_ends_within_its_deadline_in_the_lab(self, item):
        _needs_libraries(item)
        outcome = lab2(item.name)
        assert outcome.bounded, f"{item.name} took {outcome.elapsed:.1f} s for a {outcome.deadline:.1f} s deadline"
        assert not outcome.ok

    def test_round2_correct_items_get_no_false_diagnosis(self):
        wrong = {i.name: lab2(i.name).headline for i in _available("correct") if lab2(i.name).kind != "ok"}
        assert not wrong, wrong

    def test_round2_buggy_headlines_name_a_line_or_a_collective(self):
        blind = {
            i.name: lab2(i.name).headline
            for i in _available("buggy")
            if not re.search(r"\.py:\d+|barrier|all_reduce|all_gather|broadcast|gather|scatter", lab2(i.name).headline)
        }
        assert not blind, blind

    def test_round2_diagnoses_name_the_bug_or_waiting_line_of_90_percent(self):
        named = {i.name: bool(lab2(i.name).named_lines) for i in _available("buggy")}
        missed = sorted(n for n, ok in named.items() if not ok)
        assert _share(list(named.values())) >= ROUND2_NAME_TARGET, f"named {sum(named.values())}/{len(named)}: {missed}"


class TestRound2ScriptRunner:
    """Round 2 through ``barrierlab run item.py``."""

    @pytest.mark.parametrize("item", _round2_params())
    def test_round2_item_through_the_script_runner(self, item):
        _needs_libraries(item)
        outcome = round2.run_with_script_runner(item)
        assert outcome.bounded, f"{item.name} took {outcome.elapsed:.1f} s for a {outcome.deadline:.1f} s deadline"
        assert outcome.ok == (item.kind == "correct"), f"{item.name}: {outcome.statuses}\n{outcome.diagnosis}"


class TestRound2PlainTorchrun:
    """Round 2's sample under plain torchrun."""

    def test_the_round2_torchrun_sample_names_items_of_both_kinds(self):
        assert {i.kind for i in ROUND2 if i.name in ROUND2_TORCHRUN_SAMPLE} == {"correct", "buggy"}

    @pytest.mark.skipif(
        not ISOLATED, reason="needs root, unshare and ip: torchrun's store would listen on all interfaces"
    )
    @pytest.mark.parametrize("item", [p for p in _round2_params() if p.id in ROUND2_TORCHRUN_SAMPLE])
    def test_round2_item_as_a_script(self, item):
        """torchrun is the baseline, not ours to fix: a buggy item may hang until its job is killed (Lightning's
        own 30-minute timeout); it must only not succeed."""
        _needs_libraries(item)
        for _attempt in range(3):  # a correct item gets another go only after torch's own teardown abort
            outcome = round2.run_as_script(item)
            if item.kind != "correct" or outcome.returncode == 0 or TORCH_TEARDOWN_ABORT not in outcome.output:
                break
        if item.kind == "correct":
            assert outcome.returncode == 0, outcome.output[-3000:]
        else:
            assert outcome.returncode != 0, f"the bug did not show under torchrun:\n{outcome.output[-3000:]}"


# --------------------------------------------------------------------------- round 3 (tests/realworld/round3/): lint
# Items written from public code by someone who had not read lint; lint only reads them (no library needed).

ROUND3 = round2.discover(Path(__file__).parent / "realworld" / "round3")


def test_round3_lint_reports_nothing_on_correct_items():
    noisy = {i.name: harness.lint_item(i) for i in ROUND3 if i.kind == "correct"}
    assert not {n: o for n, o in noisy.items() if o.findings}, noisy


def test_round3_lint_flags_75_percent_of_buggy_items():
    flagged = {i.name: bool(harness.lint_item(i).flagged_lines) for i in ROUND3 if i.kind == "buggy"}
    missed = sorted(n for n, ok in flagged.items() if not ok)
    assert len(flagged) == 11 and _share(list(flagged.values())) >= 0.75, f"flagged {sum(flagged.values())}: {missed}"


# --------------------------------------------------------------------------- rounds 4 and 5: lint
# Round 4 (Lightning, torchmetrics, accelerate) and round 5 (sizes and counts from data, lazy subgroups, folder
# races), written from public code by others; lint only reads them. Round 4's two misses are findings on lines
# the items do not mark (see round4/README.md), so only its quiet correct items are asserted.

ROUND4 = round2.discover(Path(__file__).parent / "realworld" / "round4")
ROUND5 = round2.discover(Path(__file__).parent / "realworld" / "round5")
#: Round 6 (collectives in exception paths, dtypes and shapes from per-rank data, generation loops, group ranks),
#: written by someone who had not read lint; its rules are general (see docs/realworld.md, "Round 6").
ROUND6 = round2.discover(Path(__file__).parent / "realworld" / "round6")


@pytest.mark.parametrize("items", [ROUND4, ROUND5, ROUND6], ids=["round4", "round5", "round6"])
def test_lint_reports_nothing_on_correct_items_of_rounds_4_to_6(items):
    noisy = {i.name: harness.lint_item(i) for i in items if i.kind == "correct"}
    assert not {n: o.text for n, o in noisy.items() if o.findings}


def test_round5_lint_flags_75_percent_of_buggy_items():
    flagged = {i.name: bool(harness.lint_item(i).flagged_lines) for i in ROUND5 if i.kind == "buggy"}
    missed = sorted(n for n, ok in flagged.items() if not ok)
    assert len(flagged) == 7 and _share(list(flagged.values())) >= 0.75, f"flagged {sum(flagged.values())}: {missed}"


def test_round6_lint_flags_75_percent_of_buggy_items():
    flagged = {i.name: bool(harness.lint_item(i).flagged_lines) for i in ROUND6 if i.kind == "buggy"}
    missed = sorted(n for n, ok in flagged.items() if not ok)
    assert len(flagged) == 7 and _share(list(flagged.values())) >= 0.75, f"flagged {sum(flagged.values())}: {missed}"
