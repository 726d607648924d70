"""Tests for barrierlab.lint: a corpus of training-script snippets plus the public API."""

from __future__ import annotations

import ast
import importlib.util
import json
import linecache
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import barrierlab.lint
from barrierlab.lint import NOTHING_FOUND, Finding, lint, lint_file, lint_function, lint_source, main, report

CORPUS = Path(__file__).parent / "lint_corpus"
REALWORLD = Path(__file__).parent / "realworld"
SNIPPETS = sorted(p for p in CORPUS.iterdir() if p.name.startswith(("bad_", "good_")))

# Stand-in for torch.distributed so that these tests never import torch: the linter
# resolves `dist` through the function's globals by the module's name.
dist = types.ModuleType("torch.distributed")


def header_lines(path: Path) -> list[str]:
    """The snippet's comment lines (the first code cell's, for a notebook)."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        source = next(c["source"] for c in cells if c["cell_type"] == "code")
        return "".join(source).splitlines()
    return path.read_text().splitlines()


def expectations(path: Path) -> list[tuple[int | None, int, str, str]]:
    """Parse ``# expect: [CELL:]LINE KIND COLLECTIVE`` and ``# expect: none`` headers."""
    expected, saw_none = [], False
    for line in header_lines(path):
        if not line.startswith("# expect:"):
            continue
        spec = line.removeprefix("# expect:").strip()
        if spec == "none":
            saw_none = True
            continue
        location, kind, collective = spec.split(" ", 2)
        cell, _, number = location.rpartition(":")
        expected.append((int(cell) if cell else None, int(number), kind, collective))
    assert saw_none != bool(expected), f"{path.name}: declare either '# expect: none' or findings"
    return sorted(expected)


def as_tuples(findings: list[Finding]) -> list[tuple[int | None, int, str, str]]:
    return sorted((f.cell, f.line, f.kind, f.collective) for f in findings)


@pytest.mark.parametrize("path", SNIPPETS, ids=[p.name for p in SNIPPETS])
def test_corpus_snippet(path: Path) -> None:
    assert as_tuples(lint_file(path)) == expectations(path)


def test_corpus_covers_good_and_bad_code() -> None:
    bad = [p for p in SNIPPETS if p.name.startswith("bad_")]
    good = [p for p in SNIPPETS if p.name.startswith("good_")]
    assert len(SNIPPETS) >= 24
    assert min(len(bad), len(good)) >= 12
    assert all(expectations(p) for p in bad) and not any(expectations(p) for p in good)
    kinds = {kind for p in bad for _, _, kind, _ in expectations(p)}
    assert kinds == {
        "branch",
        "early-exit",
        "rank-dependent-loop",
        "hidden-collective",
        "p2p-order",
        "file-race",
        "except-path",
        "lock-held",
        "size-mismatch",
        "dtype-mismatch",
        "group-rank",
        "root-only-list",
        "non-member",
        "store-key",
        "self-root",
        "different-roots",
        "set-order",
        "unwaited-async",
        "aliased-outputs",
        "discarded-output",
        "signal-handler",
        "detached-loss",
        "every-rank-mkdir",
    }
    assert {p.suffix for p in bad} == {p.suffix for p in good} == {".py", ".ipynb"}


# lintfp33: false alarms on correct code written by others (session 33)

GOSSIP_EDGES = """
import itertools

import torch
import torch.distributed as dist


class Gossip:
    def __init__(self, rank, world):
        self.rank = rank
        self.edges = list(itertools.combinations(range(world), 2))
        self.edge_groups = {edge: dist.new_group(list(edge)) for edge in self.edges}

    def _mix_with(self, flat, edge):
        dist.all_reduce(flat, group=self.edge_groups[edge])

    def gossip(self, flat):
        for edge in self.edges:
            if self.rank in edge:
                self._mix_with(flat, edge)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    Gossip(rank, dist.get_world_size()).gossip(torch.ones(4))
    groups = {}
    for pair in itertools.combinations(range(dist.get_world_size()), 2):
        groups[pair] = dist.new_group(sorted(pair))
    for pair in groups:
        if rank in pair:
            dist.all_reduce(torch.ones(1), group=groups[pair])
"""


def test_a_group_per_key_under_rank_in_key_is_quiet() -> None:
    """Modelled on round23 correct_gossip_pair_groups_global_edge_order: one group per edge, made as
    ``{edge: new_group(list(edge)) for edge in edges}`` (or by a loop filling the dict), and ``if rank in edge:``
    before a collective on ``groups[edge]`` (in a helper method, ``group=self.edge_groups[edge]``): the members of
    that group are exactly the ranks whose test is true. Its buggy twin, in which only the edge's first rank takes
    the branch, is still reported, at both calls."""
    assert lint_source(GOSSIP_EDGES) == []
    buggy = GOSSIP_EDGES.replace("if self.rank in edge:", "if self.rank == edge[0]:").replace(
        "if rank in pair:", "if rank == pair[0]:"
    )
    found = lint_source(buggy)
    assert [(f.line, f.kind) for f in found] == [(20, "hidden-collective"), (32, "branch")]
    # a key that is not the group's (the next edge's group) is not the same set of ranks
    other = GOSSIP_EDGES.replace("group=groups[pair]", "group=groups[(0, 1)]")
    assert [f.line for f in lint_source(other)] == [32]


SAVE_SWITCHED_OFF = """
from dataclasses import dataclass

import torch.distributed as dist

TRAIN_RANKS = [0, 1]


@dataclass
class CheckpointConfig:
    save: str
    fully_parallel_save: bool = True


def save_model(groups, cfg):
    if cfg.fully_parallel_save:
        sizes = [None] * dist.get_world_size(groups["dp"])
        dist.all_gather_object(sizes, 1, group=groups["dp"])
    dist.barrier(group=groups["train"])


def convert(groups):
    save_model(groups, CheckpointConfig(save="out", fully_parallel_save=False))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    groups = {"dp": dist.group.WORLD, "train": dist.new_group(TRAIN_RANKS)}
    if rank in TRAIN_RANKS:
        convert(groups)
    dist.barrier()
"""


def test_a_helper_whose_switched_off_collective_leaves_one_group_of_the_branch_is_quiet() -> None:
    """Modelled on round30 correct_nemorl_conversion_fully_parallel_save_off: under ``if rank in TRAIN_RANKS:``,
    ``convert(groups)`` saves with ``CheckpointConfig(..., fully_parallel_save=False)``, so the save's
    ``all_gather_object`` on the whole world (under ``if cfg.fully_parallel_save:``) is not made and what is left is
    a barrier on the training ranks' group: quiet. The buggy twin (round30
    buggy_nemorl_fully_parallel_save_includes_vllm_ranks) keeps the default True: the all_gather_object is still
    reported at the call, and so is a gate left at its default."""
    assert lint_source(SAVE_SWITCHED_OFF) == []
    for buggy in (
        SAVE_SWITCHED_OFF.replace("fully_parallel_save=False", "fully_parallel_save=True"),
        SAVE_SWITCHED_OFF.replace(", fully_parallel_save=False", ""),
    ):
        found = lint_source(buggy)
        assert [(f.line, f.kind) for f in found] == [(31, "hidden-collective")]
        assert found[0].collective.endswith("dist.all_gather_object")
    default_off = SAVE_SWITCHED_OFF.replace("fully_parallel_save: bool = True", "fully_parallel_save: bool = False")
    assert lint_source(default_off.replace(", fully_parallel_save=False", "")) == []


AGREED_PRECONDITION = """
import torch
import torch.distributed as dist


def free_bytes(rank):
    return 64 << 20 if rank == 0 else 128 << 10


class FastAllReduce:
    def __init__(self, max_elements):
        rank = dist.get_rank()
        needed = max_elements * 4 * 2
        if needed > free_bytes(rank):
            raise RuntimeError("not enough shared memory")
        self.peers = [None] * dist.get_world_size()
        dist.all_gather_object(self.peers, {"rank": rank})


def build(max_elements):
    rank = dist.get_rank()
    local_ok = max_elements * 4 * 2 <= free_bytes(rank)
    ok = torch.tensor([int(local_ok)])
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if not ok.item():
        return None
    return FastAllReduce(max_elements)


def main():
    dist.init_process_group("gloo")
    comm = build(1 << 16)
    dist.barrier()
"""


def test_a_raise_whose_test_every_rank_agreed_is_false_before_the_call_is_quiet() -> None:
    """Modelled on round7 correct_fast_allreduce_agreed_fallback: the constructor raises ``if needed >
    free(rank)`` before its all_gather_object, but its one call comes after the ranks all-reduced (MIN) a flag of
    the same test's negation, ``max_elements * 4 * 2 <= free(rank)``, and every rank returned when it was false
    somewhere: the raise cannot run, quiet. The buggy twin (round7 buggy_fast_allreduce_per_rank_fallback) calls the
    constructor with no agreement: the early exit at the all_gather_object (line 17) is reported, and so it is when
    the agreement is on another test, with MAX, or when another call of the constructor goes without it."""
    assert lint_source(AGREED_PRECONDITION) == []
    no_agreement = AGREED_PRECONDITION.replace("    if not ok.item():\n        return None\n", "")
    other_test = AGREED_PRECONDITION.replace("local_ok = max_elements * 4 * 2 <=", "local_ok = max_elements * 4 <=")
    with_max = AGREED_PRECONDITION.replace("ReduceOp.MIN", "ReduceOp.MAX")
    second_call = AGREED_PRECONDITION.replace("    dist.barrier()\n", "    FastAllReduce(8)\n    dist.barrier()\n")
    for buggy in (no_agreement, other_test, with_max, second_call):
        assert buggy != AGREED_PRECONDITION
        assert (17, "early-exit") in [(f.line, f.kind) for f in lint_source(buggy)]
    # the flag of the test itself, all-reduced with MAX, and a return where it holds somewhere: quiet too
    bad_flag = (
        AGREED_PRECONDITION.replace(
            "local_ok = max_elements * 4 * 2 <= free_bytes(rank)", "short = free_bytes(rank) < max_elements * 4 * 2"
        )
        .replace("int(local_ok)", "int(short)")
        .replace("ReduceOp.MIN", "ReduceOp.MAX")
        .replace("if not ok.item()", "if ok.item()")
    )
    assert lint_source(bad_flag) == []


def save_checkpoint(state: dict, path: str) -> None:
    with open(path, "w") as f:
        f.write(repr(state))
    dist.barrier()


def train_step_with_rank0_save(rank: int, state: dict) -> None:
    if rank == 0:
        save_checkpoint(state, "ckpt.txt")
    loss = state["loss"]
    if loss > 1:
        dist.barrier()
    if rank != 0:
        return
    dist.all_reduce(loss)


def test_lint_function_on_function_object() -> None:
    findings = lint_function(train_step_with_rank0_save)
    first = train_step_with_rank0_save.__code__.co_firstlineno
    assert as_tuples(findings) == [
        (None, first + 2, "hidden-collective", "save_checkpoint -> dist.barrier"),
        (None, first + 8, "early-exit", "dist.all_reduce"),
    ]
    assert {f.path for f in findings} == {__file__}
    assert [f.condition for f in findings] == ["rank == 0", "rank != 0"]
    assert lint(train_step_with_rank0_save) == findings


class Evaluator:
    def sync(self, rank: int) -> None:
        if rank == 0:
            dist.barrier()


def test_lint_function_on_a_method_keeps_file_positions() -> None:
    line = Evaluator.sync.__code__.co_firstlineno + 2
    expected = [(__file__, line, 13, "branch", "dist.barrier")]
    for target in (Evaluator.sync, Evaluator().sync, Evaluator):
        assert [(f.path, f.line, f.col, f.kind, f.collective) for f in lint(target)] == expected


def test_lint_function_defined_in_a_notebook_cell() -> None:
    """IPython compiles each cell under a ``<ipython-input-N-...>`` name and puts its source in linecache."""
    cell = textwrap.dedent(
        """\
        threshold = 0.5

        def evaluate(model, rank):
            score = model()
            if rank == 0 and score > threshold:
                print(score)
                dist.barrier()
            return score
        """
    )
    filename = "<ipython-input-7-0123456789ab>"
    linecache.cache[filename] = (len(cell), None, cell.splitlines(keepends=True), filename)
    try:
        namespace: dict = {"__name__": "__main__", "dist": dist}
        exec(compile(cell, filename, "exec"), namespace)
        findings = lint_function(namespace["evaluate"])
    finally:
        del linecache.cache[filename]
    assert [(f.path, f.line, f.col, f.kind, f.collective, f.condition) for f in findings] == [
        ("<cell 7>", 7, 9, "branch", "dist.barrier", "rank == 0 and score > threshold")
    ]


IPYTHON_SESSION = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("lint_under_test", sys.argv[1])
lint = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = lint
spec.loader.exec_module(lint)
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_cell("import types\\ndist = types.ModuleType('torch.distributed')")
shell.run_cell("def sync(rank):\\n    for _ in range(rank + 1):\\n        dist.barrier()\\n")
print(json.dumps([[f.path, f.line, f.kind, f.condition] for f in lint.lint_function(shell.user_ns["sync"])]))
"""


def test_lint_function_in_a_real_ipython_shell(tmp_path: Path) -> None:
    """End to end in a separate process, so the shell cannot touch this test session."""
    pytest.importorskip("IPython")
    done = subprocess.run(
        [sys.executable, "-c", IPYTHON_SESSION, barrierlab.lint.__file__],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "IPYTHONDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    [[path, line, kind, condition]] = json.loads(done.stdout.splitlines()[-1])
    assert re.fullmatch(r"<cell \d+>", path)
    assert (line, kind, condition) == (3, "rank-dependent-loop", "range(rank + 1)")


def test_notebook_findings_carry_cell_numbers() -> None:
    notebook = CORPUS / "bad_notebook.ipynb"
    findings = lint_file(notebook)
    assert [(f.path, f.cell, f.line) for f in findings] == [(str(notebook), 4, 6), (str(notebook), 5, 3)]
    assert str(findings[1]).startswith(f"{notebook}:cell 5, line 3: dist.barrier [branch]")
    assert lint(str(notebook)) == lint(notebook) == findings


def test_notebook_magics_and_unparsable_cells_are_skipped(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "code", "source": ["%pip install torch\n", "import torch.distributed as dist\n"]},
        {"cell_type": "code", "source": "listing = !ls\nrank = dist.get_rank()\n"},
        {"cell_type": "code", "source": "dist.barrier?\n"},
        {"cell_type": "markdown", "source": "if rank == 0: dist.barrier()"},
        {"cell_type": "code", "source": ["%%time\n", "if rank == 0:\n", "    dist.barrier()\n"]},
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert [(f.cell, f.line, f.kind) for f in lint_file(path)] == [(5, 3, "branch")]


BAD = """\
import torch.distributed as dist

def step(rank, t):
    if rank == 0:
        dist.barrier()
    dist.all_reduce(t)
"""


def test_finding_str_has_location_condition_and_fix() -> None:
    [finding] = lint_source(BAD, "train.py")
    assert (finding.path, finding.line, finding.col, finding.cell) == ("train.py", 5, 9, None)
    assert finding.condition == "rank == 0"
    text = str(finding)
    assert text.startswith("train.py:5: dist.barrier [branch] only ranks where `rank == 0` is true")
    assert "Fix: move `dist.barrier()` out from under `rank == 0` so every rank calls it" in text


def test_report_text() -> None:
    assert report([]) == NOTHING_FOUND
    assert NOTHING_FOUND.startswith("No problems found by lint's static checks (") and "barrierlab run" in NOTHING_FOUND
    assert len(NOTHING_FOUND.splitlines()) == 2
    findings = lint_source(BAD + "    if rank != 0:\n        dist.broadcast(t, src=0)\n", "train.py")
    lines = report(findings).splitlines()
    assert lines[0] == "2 rank-dependent collectives found:"
    assert "train.py:5: dist.barrier [branch]" in lines
    assert "train.py:8: dist.broadcast [branch]" in lines
    assert "    condition: rank != 0 (line 7)" in lines and "    condition: rank == 0 (line 4)" in lines
    assert sum(line.startswith("    fix: ") for line in lines) == 2
    assert report(findings[:1]).splitlines()[0] == "1 rank-dependent collective found:"


def test_lint_dispatches_on_module_path_and_rejects_other_objects() -> None:
    path = CORPUS / "bad_rank0_save_checkpoint.py"
    spec = importlib.util.spec_from_file_location("snippet_not_executed", path)
    module = importlib.util.module_from_spec(spec)  # only the source is read: torch is never imported
    assert lint(module) == lint(path) == lint(str(path)) == lint_file(path)
    with pytest.raises(TypeError):
        lint(42)


def test_unrecognised_receivers_and_point_to_point_are_not_flagged() -> None:
    source = """\
import torch.distributed as dist

class Worker:
    def run(self, rank, t):
        if rank == 0:
            self.group.barrier()
            dist.send(t, dst=1)
            dist.isend(t, dst=1).wait()
        else:
            dist.recv(t, src=0)
"""
    assert lint_source(source) == []


def test_call_graph_depth_is_unlimited_and_cycles_terminate() -> None:
    source = """\
import torch.distributed as dist

def a(n):
    return b(n) if n else c()

def b(n):
    return a(n - 1)

def c():
    return d()

def d():
    dist.all_gather_object(OUTPUTS, 1)

def run(rank):
    while rank > 0:
        a(3)
        rank -= 1
"""
    [finding] = lint_source(source)
    assert (finding.line, finding.kind) == (17, "hidden-collective")
    assert finding.collective == "a -> c -> d -> dist.all_gather_object"
    assert finding.condition == "rank > 0"


def test_command_line_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(CORPUS / "good_save_then_barrier.py")]) == 0
    assert capsys.readouterr().out.strip() == NOTHING_FOUND
    assert main([str(CORPUS / "bad_is_main_process_barrier.py")]) == 1
    assert "dist.barrier [branch]" in capsys.readouterr().out


def test_a_helper_that_broadcasts_its_result_is_not_rank_dependent():
    source = """
import tempfile
import torch.distributed as dist

def shared_dir():
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]

def main(workdir=None):
    workdir = workdir or shared_dir()
    if workdir:
        dist.barrier()
"""
    assert lint_source(source) == []


def test_lint_flags_exactly_the_scenarios_that_are_bugs_on_purpose():
    import glob
    import os

    from barrierlab import scenarios

    folder = os.path.dirname(scenarios.__file__)
    flagged = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(folder, "*.py")) if lint_file(p)}
    assert flagged == {
        "barrier_on_rank0",
        "barrier_vs_all_reduce",
        "debug_level_too_late",
        "early_return",
        # a rank's load_batch() raises under `rank == bad_rank` before the loop's all_reduce (a rank-gated raise)
        "exception_mid_loop",
        "extra_barrier",
        "find_the_bug",
        "hidden_collective",
        # a tensor sized `size_on_rank0 if rank == 0 else size_elsewhere` handed to an all_reduce (review64b M3)
        "mismatched_sizes",
        "monitored_barrier_missing",
        "object_vs_tensor_broadcast",
        # 01 §4: rank 0's download raises (fail_after) and the others wait in the bare barrier; lint sees the
        # raise inside download() called under `rank == 0` before the barrier
        "rank0_prepares_data",
        "rank_exits_mid_job",
        # 04 §1: give_up="barrier" has rank 0 alone call barrier(timeout=...) to show a per-call timeout expire
        "timeout_closes_every_pair",
        "uneven_data",
    }


# --------------------------------------------------------------------------- issue 12: lint reaches real code


@pytest.mark.parametrize(
    "name", ["good_get_dist_info_tuple.py", "good_broadcast_stop_then_break.py", "good_partitioned_range_loop.py"]
)
def test_the_false_alarms_issue_12_lists_are_quiet(name: str) -> None:
    assert lint_file(CORPUS / name) == []


def test_framework_findings_say_what_the_call_issues_inside() -> None:
    source = """\
from accelerate import Accelerator

def save(accelerator: Accelerator):
    if accelerator.is_main_process:
        accelerator.save_state()
"""
    [finding] = lint_source(source, "train.py")
    assert (finding.line, finding.kind, finding.collective, finding.condition) == (
        5,
        "branch",
        "accelerator.save_state",
        "accelerator.is_main_process",
    )
    assert "Accelerate: a barrier (wait_for_everyone)" in finding.why
    assert finding.fix == (
        "move `accelerator.save_state()` out from under `accelerator.is_main_process` so every rank calls it"
    )


def test_the_framework_table_is_extendable(monkeypatch: pytest.MonkeyPatch) -> None:
    source = """\
import torch.distributed as dist

def step(hub):
    if dist.get_rank() == 0:
        hub.sync_all()
"""
    assert lint_source(source) == []
    extra = barrierlab.lint.FrameworkCollective("MyLib", "sync_all", "a barrier", receivers=frozenset({"hub"}))
    monkeypatch.setattr(barrierlab.lint, "FRAMEWORK_COLLECTIVES", barrierlab.lint.FRAMEWORK_COLLECTIVES + (extra,))
    [finding] = lint_source(source)
    assert (finding.line, finding.collective) == (5, "hub.sync_all") and "MyLib: a barrier" in finding.why


def test_framework_names_on_unrelated_receivers_are_not_collectives() -> None:
    source = """\
import torch.distributed as dist

def step(rank, cache, loader, optimizer):
    if rank == 0:
        cache.gather()
        loader.barrier()
        optimizer.step()
        cache.save_state()
"""
    assert lint_source(source) == []


def test_ddp_backward_under_no_sync_or_inside_join_is_not_a_collective() -> None:
    source = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

def accumulate(rank, batches):
    model = DDP(torch.nn.Linear(2, 1))
    with model.no_sync():
        for x in batches[rank:]:
            model(x).sum().backward()
"""
    # forward still syncs buffers/buckets in general, so only the backward is exempt
    assert [(f.line, f.collective) for f in lint_source(source)] == [(8, "model() (DDP forward)")]


def test_a_ddp_model_passed_to_a_helper_makes_its_forward_a_collective() -> None:
    source = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def predict(net, x):
    return net(x)

def main(x):
    model = DDP(torch.nn.Linear(2, 1))
    if dist.get_rank() == 0:
        predict(model, x)
    predict(torch.nn.Linear(2, 1), x)
"""
    [finding] = lint_source(source)
    assert (finding.line, finding.kind) == (11, "hidden-collective")
    assert finding.collective == "predict -> net() (DDP forward)"
    assert "if the module has buffers, it broadcasts them at its first forward" in finding.why


def test_a_value_is_rank_independent_only_after_its_all_reduce() -> None:
    source = """\
import torch
import torch.distributed as dist

def step(flag_value):
    flag = torch.tensor([float(dist.get_rank() == 0)])
    if flag.item():
        dist.barrier()
    dist.all_reduce(flag)
    if flag.item():
        dist.barrier()
"""
    assert [f.line for f in lint_source(source)] == [7]


def test_a_world_size_only_condition_is_quiet_and_a_rank_element_is_not() -> None:
    source = """\
import torch.distributed as dist
from mmengine.dist import get_dist_info

def info():
    return dist.get_rank(), dist.get_world_size()

def step():
    rank, world_size = get_dist_info()
    if world_size > 1:
        dist.barrier()
    me, n = info()
    if n > 1:
        dist.barrier()
    if me == 0:
        dist.barrier()
"""
    assert [f.line for f in lint_source(source)] == [15]


# --------------------------------------------------------------------------- issue 22: lint agrees with the lessons

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"

#: Per notebook, the functions lint must flag (name, collective, kind): exactly the bugs the lesson shows on
#: purpose in a cell of its own. Everything else a notebook runs is presented as correct and must be quiet.
LESSON_BUGS = {
    "00_what_is_a_barrier.ipynb": [("rank3_skips_the_barrier", "dist.barrier", "branch")],
    "07_barrier_as_a_debugging_tool.ipynb": [("hang_after_breakpoint", "dist.barrier", "branch")],
    # 03 §4: "the same bug, with that barrier added": rank 0's extra barrier evened out by ranks 1-3's later one
    "03_deadlocks.ipynb": [
        ("extra_barrier_evened_out", "dist.barrier", "branch"),
        ("extra_barrier_evened_out", "dist.barrier", "branch"),
    ],
    # 01's exercise "the barrier is in the wrong place", stored unsolved: rank 0 writes the vocabulary after the
    # barrier and every rank reads it with nothing in between
    "01_barriers_at_initialization.ipynb": [("build_vocab_then_read", "open", "file-race")],
}


def enclosing_function(notebook: Path, cell: int, line: int) -> str:
    source = "".join(json.loads(notebook.read_text())["cells"][cell - 1]["source"])
    source = "".join("\n" if re.match(r"\s*[%!]", s) else s for s in source.splitlines(keepends=True))
    defs = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef) and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    return max(defs, key=lambda n: n.lineno).name if defs else "<cell>"


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_lint_on_every_notebook_finds_exactly_the_lessons_deliberate_bugs(notebook: Path) -> None:
    findings = lint_file(notebook)
    found = sorted((enclosing_function(notebook, f.cell, f.line), f.collective, f.kind) for f in findings)
    assert found == sorted(LESSON_BUGS.get(notebook.name, [])), report(findings)


def test_the_lessons_bugs_are_still_in_the_notebooks() -> None:
    """A renamed lesson function must update LESSON_BUGS, not silently drop the check."""
    assert set(LESSON_BUGS) <= {p.name for p in NOTEBOOKS.glob("*.ipynb")}


# --------------------------------------------------------------------------- issue 20: imports, help, subgroups


def test_the_learners_own_modules_are_followed_next_to_the_file_and_only_so_deep(tmp_path: Path) -> None:
    (tmp_path / "first.py").write_text("import second\n\ndef sync():\n    second.sync()\n")
    (tmp_path / "second.py").write_text("import third\n\ndef sync():\n    third.sync()\n")
    (tmp_path / "third.py").write_text("import fourth\n\ndef sync():\n    fourth.sync()\n")
    (tmp_path / "fourth.py").write_text(
        "import torch.distributed as dist\n\ndef sync():\n    dist.barrier()\n\n"
        "def own_bug():\n    if dist.get_rank() == 0:\n        dist.barrier()\n"
    )
    script = "import torch.distributed as dist\nimport {0}\n\ndef main():\n    if dist.get_rank() == 0:\n        {0}.sync()\n"
    (tmp_path / "near.py").write_text(script.format("third"))
    (tmp_path / "far.py").write_text(script.format("first"))
    [finding] = lint_file(tmp_path / "near.py")
    assert (finding.path, finding.line, finding.collective) == (
        str(tmp_path / "near.py"),
        6,
        "third.sync -> fourth.sync -> dist.barrier",
    )  # fourth.py's own bug is not reported here: lint it on its own
    assert barrierlab.lint.MAX_FOLLOW_DEPTH == 3
    assert lint_file(tmp_path / "far.py") == []  # first -> second -> third -> fourth is 4 imports deep
    assert lint_source((tmp_path / "near.py").read_text()) == []  # source text has no folder to look in


def test_a_collective_on_a_group_lint_cannot_work_out_is_still_reported() -> None:
    source = """\
import torch.distributed as dist

def step(tp_size, t):
    group = make_group(tp_size)
    if dist.get_rank() % tp_size == 0:
        dist.all_reduce(t, group=group)
"""
    assert [(f.line, f.kind) for f in lint_source(source)] == [(6, "branch")]


def test_help_says_what_lint_does_not_check(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("Not checked", "tensor sizes", "object lists", "timeout", "group=", "import helpers"):
        assert words in text


# --------------------------------------------------------------------------- issue 21: lint on hostile input


def chained_functions(n: int) -> str:
    """f1 calls f2 ... calls fn, each under ``if rank == 0:``; fn calls a barrier (every call is a finding)."""
    funcs = [
        f"def f{i}(rank):\n    if rank == 0:\n        return f{i + 1}(rank) + 1\n    return rank\n" for i in range(1, n)
    ]
    funcs.append(f"def f{n}(rank):\n    dist.barrier()\n    return rank\n")
    return "import torch.distributed as dist\n\n" + "\n".join(funcs)


def test_lint_time_grows_about_linearly_with_a_chain_of_functions() -> None:
    """1,600 chained functions (130 kB) took about 35 s of CPU when every finding re-split the whole source and
    the call graph was swept once per link; benchmarks/lint_scale.py has the figures."""
    import time

    source = chained_functions(1600)
    start = time.process_time()  # CPU seconds: stretched by the load too on this machine, far less than wall time
    findings = lint_source(source, "chain.py")
    assert time.process_time() - start < 25  # 10.1-11.8 s seen at load 8-14 (session 34); the regression took 35 s
    assert len(findings) == 1599
    assert findings[0].collective.startswith("f2 -> f3 -> ") and "... (1587 calls) -> " in findings[0].collective
    assert findings[0].collective.endswith(" -> f1600 -> dist.barrier")
    assert findings[-1].collective == "f1600 -> dist.barrier"


def lint_command(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "barrierlab", "lint", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_fifo_is_refused_by_name_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "train.py"
    os.mkfifo(fifo)
    with pytest.raises(barrierlab.lint.LintError, match=r"train\.py: it is a FIFO, not a regular file"):
        lint_file(fifo)
    done = lint_command(fifo)  # hung until killed before
    assert done.returncode == 2
    assert done.stderr == f"barrierlab lint: cannot lint {fifo}: it is a FIFO, not a regular file\n"


def test_a_device_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    """/dev/zero was read until MemoryError; a symlink to it is refused the same way."""
    link = tmp_path / "train.py"
    link.symlink_to("/dev/zero")
    for path in (Path("/dev/zero"), link):
        with pytest.raises(barrierlab.lint.LintError, match="it is a character device, not a regular file"):
            lint_file(path)
    with pytest.raises(barrierlab.lint.LintError, match="it is a folder"):
        lint_file(tmp_path)


def test_a_file_larger_than_the_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(barrierlab.lint, "MAX_FILE_BYTES", 1000)
    path = tmp_path / "big.py"
    path.write_text("x = 1\n" * 200)
    with pytest.raises(barrierlab.lint.LintError, match=r"big\.py: larger than 1000 bytes"):
        lint_file(path)
    path.write_text("x = 1\n" * 100)
    assert lint_file(path) == []


RANK_ZERO_ONLY = "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n"


@pytest.mark.parametrize("expression", ["a" + "<a" * 350_000, "a" + " and a" * 170_000], ids=["compare", "and"])
def test_an_expression_of_too_many_operands_is_refused_at_once(tmp_path: Path, expression: str) -> None:
    """attack12 r4: one line within the size bound, one comparison chain or `and` of 170,000+ operands, cost lint
    10-57 s of CPU and up to 1.4 GB; it is refused by name in about a second."""
    import time

    path = tmp_path / "flat.py"
    path.write_text("import torch.distributed as dist\nx = " + expression + "\n")
    started = time.process_time()
    with pytest.raises(barrierlab.lint.LintError, match=r"flat\.py: the expression at line 2 has [\d,]+ operands"):
        lint_file(path)
    assert time.process_time() - started < 15  # generous: about 1 s here


@pytest.mark.timeout(60)
def test_a_notebook_with_more_code_than_lint_analyses_is_refused_by_name_before_analysis(tmp_path: Path) -> None:
    """attack4 A10c: a 13.5 MB notebook of rank-0-only barriers (well under MAX_FILE_BYTES) took 63 s of CPU here,
    minutes on a loaded machine. Just past the bound (12 cells of 90 kB), it was analysed for seconds before."""
    import nbformat

    cell = RANK_ZERO_ONLY * (90_000 // len(RANK_ZERO_ONLY))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for _ in range(12)])
    path = tmp_path / "big.ipynb"
    nbformat.write(notebook, path)
    assert 12 * len(cell) > barrierlab.lint.MAX_CODE_CHARS
    with pytest.raises(barrierlab.lint.LintError, match=r"big\.ipynb: 1,07\d,\d+ characters of code, more than lint"):
        lint_file(path)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(RANK_ZERO_ONLY)]), path)
    assert len(lint_file(path)) == 1


def test_a_module_that_would_take_the_code_past_the_bound_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "helpers.py").write_text("import torch.distributed as dist\n\ndef sync():\n    dist.barrier()\n")
    script = tmp_path / "main.py"
    script.write_text(
        "import torch.distributed as dist\nimport helpers\n\ndef main():\n    if dist.get_rank() == 0:\n        helpers.sync()\n"
    )
    assert len(lint_file(script)) == 1
    monkeypatch.setattr(barrierlab.lint, "MAX_CODE_CHARS", len(script.read_text()) + 20)
    assert lint_file(script) == []  # helpers.py is not followed: it would take the code past the bound
    monkeypatch.setattr(barrierlab.lint, "MAX_CODE_CHARS", 10)
    with pytest.raises(barrierlab.lint.LintError, match="characters of code"):
        lint_file(script)
    with pytest.raises(barrierlab.lint.LintError, match="characters of code"):
        lint_source(script.read_text())


def test_unreadable_files_get_one_line_each_and_the_others_are_still_linted(tmp_path: Path) -> None:
    latin = tmp_path / "latin.py"
    latin.write_bytes(b'name = "caf\xe9"\n')
    broken = tmp_path / "broken.ipynb"
    broken.write_text('{"cells": [')
    wrong = tmp_path / "wrong.ipynb"
    wrong.write_text(json.dumps({"cells": [{"cell_type": "code", "source": 42}]}))
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(:\n")
    declared = tmp_path / "declared.py"  # a declared encoding is honoured
    declared.write_bytes(b"# -*- coding: latin-1 -*-\n" + BAD.encode() + b"# caf\xe9\n")
    done = lint_command(latin, broken, CORPUS / "bad_is_main_process_barrier.py", wrong, syntax, declared)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"barrierlab lint: cannot lint {latin}: not UTF-8 text (byte 0xe9 at offset 11)",
        f"barrierlab lint: cannot lint {broken}: not a notebook: invalid JSON (Expecting value, line 1)",
        f"barrierlab lint: cannot lint {wrong}: not a notebook: cell 1's source is not text",
        f"barrierlab lint: cannot lint {syntax}: not valid Python: invalid syntax (line 1)",
    ]
    assert done.stdout.startswith("2 rank-dependent collectives found:")
    assert f"{declared}:6: dist.barrier [branch]" in done.stdout
    assert "bad_is_main_process_barrier.py" in done.stdout


def test_exit_status_is_0_clean_1_found_2_unreadable(tmp_path: Path) -> None:
    clean = lint_command(CORPUS / "good_elif_chain.py")
    assert (clean.returncode, clean.stdout.strip()) == (0, NOTHING_FOUND)
    assert lint_command(CORPUS / "bad_aliases.py").returncode == 1
    missing = lint_command(tmp_path / "missing.py", CORPUS / "good_elif_chain.py")
    assert missing.returncode == 2
    assert missing.stdout.strip().startswith("No problems found in the files lint could read by lint's static checks")
    assert missing.stdout.strip().endswith("(barrierlab run).")
    assert missing.stderr.strip().endswith("missing.py: No such file or directory")


# --------------------------------------------------------------------------- round 3: what lint missed


def test_a_decorator_is_followed_into_the_module_that_defines_it() -> None:
    """``master_only`` says nothing of ranks by its name: only its body, in the imported helper module, does."""
    path = CORPUS / "bad_imported_master_only_method.py"
    [finding] = lint_file(path)
    assert (finding.condition, finding.kind) == ("@master_only", "branch")
    assert lint_source(path.read_text()) == []  # without the folder there is no helper module to read


def test_a_file_system_check_is_rank_dependent_and_the_finding_says_why() -> None:
    [finding] = lint_file(CORPUS / "bad_isfile_tracker_then_all_reduce.py")
    assert finding.condition == "not tracker.is_file()"
    assert "a file-system check can answer differently on different ranks" in finding.why
    assert finding.fix.startswith("check on one rank and broadcast the answer")


def test_send_first_on_every_rank_is_a_cycle_and_ordered_or_nonblocking_p2p_is_not() -> None:
    source = """\
import torch.distributed as dist

def exchange(t, peer):
    dist.send(t, dst=peer)
    dist.recv(t, src=peer)

def exchange_nonblocking(t, u, peer):
    req = dist.isend(t, dst=peer)
    dist.recv(u, src=peer)
    req.wait()
"""
    [finding] = lint_source(source, "halo.py")
    assert (finding.line, finding.kind, finding.collective) == (4, "p2p-order", "dist.send")
    assert "on gloo a send returns only once the peer has posted its receive" in finding.why


def test_a_file_rank0_writes_needs_an_ordering_call_before_the_others_read_it() -> None:
    template = """\
import os
import torch
import torch.distributed as dist

def resume(model, path):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path + ".tmp")
        os.replace(path + ".tmp", path)
    {between}
    model.load_state_dict(torch.load(path, map_location="cpu"))
"""
    [race] = lint_source(template.format(between="pass"))
    assert (race.line, race.kind, race.collective, race.condition) == (
        10,
        "file-race",
        "torch.load",
        "dist.get_rank() == 0",
    )
    assert "write `path` at line 8 (os.replace)" in race.why
    for orderer in ("dist.barrier()", "dist.all_reduce(torch.zeros(1))", "store.wait(['saved'])"):
        # no line of the snippet sets 'saved': its store.wait is a store-key finding of its own (lintgap30)
        assert [f for f in lint_source(template.format(between=orderer)) if f.kind != "store-key"] == [], orderer


def test_lint_says_what_it_cannot_see(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "how long anything takes" in text and "p2p-order" in text and "file-race" in text


def test_a_write_inside_main_process_first_or_before_a_callback_is_not_a_race() -> None:
    source = """\
import os
from barrierlab.sync import main_process_first

def prepare(folder):
    path = os.path.join(folder, "data.txt")
    with main_process_first() as is_main:
        if is_main:
            with open(path, "w") as f:
                f.write("ready")
    with open(path) as f:
        return f.read()

def handoff(path, rank, wait):
    if rank == 0:
        with open(path, "w") as f:
            f.write("ready")
    wait()
    with open(path) as f:
        return f.read()
"""
    assert lint_source(source) == []


def test_p2p_under_any_condition_is_left_alone() -> None:
    """A pipeline stage's ``if not is_first_stage:`` is a rank test lint cannot recognise by its name."""
    source = """\
import torch.distributed as dist

def step(t, prev, nxt, is_first_stage, is_last_stage):
    if not is_first_stage:
        dist.recv(t, src=prev)
    t = t * 2
    if not is_last_stage:
        dist.send(t, dst=nxt)
"""
    assert lint_source(source) == []


def test_p2p_after_an_if_that_returns_is_under_its_negation() -> None:
    """Code after ``if is_first_stage(): ...; return`` runs only on the other stages: its recv-then-send is
    not every rank's (modelled on Megatron-LM's forward/backward step, as round 7's pipeline items write it).
    The same order with no early exit is still a cycle."""
    template = """\
import torch.distributed as dist

def step(t, prev, nxt, first):
    if first:
        dist.send(t, dst=nxt)
        dist.recv(t, src=nxt)
        {leave}
    dist.recv(t, src=prev)
    dist.send(t, dst=prev)
"""
    assert lint_source(template.format(leave="return None")) == []
    assert lint_source(template.format(leave='raise RuntimeError("stage")')) == []
    [cycle] = lint_source(template.format(leave="pass"))
    assert (cycle.line, cycle.kind, cycle.collective) == (8, "p2p-order", "dist.recv")


def test_lint_time_grows_about_linearly_with_a_chain_of_assignments() -> None:
    """x2 = x1 + 1 ... x2000 from x1 = rank: the taint closure swept every assignment once per link (15 s of
    CPU on main for 2,000); it now tests each assignment again only when a name it reads becomes tainted."""
    import time

    steps = "".join(f"    x{i} = x{i - 1} + 1\n" for i in range(2, 2001))
    source = f"import torch.distributed as dist\n\ndef f(rank):\n    x1 = rank\n{steps}    if x2000 > 0:\n"
    source += "        dist.barrier()\n"
    start = time.process_time()
    [finding] = lint_source(source)
    assert time.process_time() - start < 10
    assert (finding.line, finding.condition) == (2005, "x2000 > 0")


def test_lint_time_grows_about_linearly_with_the_methods_of_a_class() -> None:
    """1,600 chained methods of one class: every method merged every method's self.x names (40 s of CPU on
    main); each class's names are now gathered once."""
    import time

    source = chained_functions(1600).replace("(rank)", "(self, rank)").replace("return f", "return self.f")
    source = source.replace("import torch.distributed as dist\n\n", "import torch.distributed as dist\n\nclass T:\n")
    source = "\n".join(("    " + line if line.startswith(("def ", "    ")) else line) for line in source.splitlines())
    start = time.process_time()
    findings = lint_source(source, "chain.py")
    # 8-12 s of CPU at load 8-14 in session 34 (CPU time too grows with the load on this machine): the bound is
    # for the quadratic merge this test was written against (40 s on a quiet machine), not for a busy one
    assert time.process_time() - start < 25
    assert len(findings) == 1599 and findings[0].collective.startswith("self.f2 -> self.f3 -> ")


# --------------------------------------------------------------------------- session 6: data flows into collectives


def test_a_counter_changed_under_a_rank_dependent_if_is_rank_dependent() -> None:
    source = """\
import torch.distributed as dist

def train(model, losses):
    rank = dist.get_rank()
    best, bad = float("inf"), 0
    for epoch in range(10):
        dist.all_reduce(model)
        val = losses[rank][epoch]
        if val < best:
            best, bad = val, 0
        else:
            bad += 1
        if bad >= 2:
            break
"""
    [finding] = lint_source(source)
    assert (finding.line, finding.kind, finding.condition) == (7, "early-exit", "bad >= 2")


def test_a_flag_copied_from_a_broadcast_under_a_rank_test_is_not_rank_dependent() -> None:
    source = """\
import torch.distributed as dist

def train(model, stopper):
    rank = dist.get_rank()
    stop = False
    for epoch in range(10):
        dist.all_reduce(model)
        if rank == 0:
            stop = stopper(epoch)
        box = [stop if rank == 0 else None]
        dist.broadcast_object_list(box, 0)
        if rank != 0:
            stop = box[0]
        if stop:
            break
"""
    assert lint_source(source) == []


def test_a_loop_variable_over_a_rank_dependent_list_is_rank_dependent() -> None:
    source = """\
import torch.distributed as dist

STAGES = {0: ["a", "b"], 1: ["c"]}

def run(rank):
    for name in STAGES[rank]:
        if name == "a":
            dist.barrier()
"""
    [finding] = lint_source(source)
    assert (finding.line, finding.kind) == (8, "branch")


FOLDER = """\
import os
import torch
import torch.distributed as dist

def save(folder, state, rank):
    if rank == 0:
        os.makedirs(folder, exist_ok=True)
{between}    torch.save(state, os.path.join(folder, f"shard{{rank}}.pt"))
"""


def test_a_folder_one_rank_makes_and_every_rank_writes_into_is_a_race() -> None:
    [finding] = lint_source(FOLDER.format(between=""))
    assert (finding.line, finding.kind, finding.condition) == (7, "file-race", "rank == 0")
    assert "create the folder `folder`" in finding.why and "line 8 (`torch.save`)" in finding.why
    assert "exist_ok=True) outside the condition" in finding.fix


def test_a_folder_ordered_by_a_barrier_or_made_by_every_rank_is_not_a_race() -> None:
    for between in ("    dist.barrier()\n", "    os.makedirs(folder, exist_ok=True)\n"):
        assert lint_source(FOLDER.format(between=between)) == [], between


def test_an_all_reduce_of_a_bincount_without_minlength_has_a_size_from_the_data() -> None:
    source = """\
import torch
import torch.distributed as dist

def class_counts(labels):
    counts = torch.bincount(labels{minlength}).float()
    dist.all_reduce(counts)
    return counts
"""
    [finding] = lint_source(source.format(minlength=""))
    assert (finding.line, finding.kind) == (6, "size-mismatch")
    assert "`torch.bincount(labels)` (line 5)" in finding.why and "minlength" in finding.fix
    assert lint_source(source.format(minlength=", minlength=10")) == []


LOSS_DICT = """\
import torch
import torch.distributed as dist

def criterion(outputs):
    losses = {{"loss": outputs["logits"].mean()}}
    if "aux" in outputs:
        losses["aux"] = outputs["aux"].mean()
    return losses

def reduce_dict(data):
{keys}
    values = torch.stack([data[k] if k in data else torch.tensor(0.0) for k in keys])
    dist.all_reduce(values)
    return dict(zip(keys, values))

def step(model, batch):
    loss_dict = criterion(model(batch))
    return reduce_dict(loss_dict)
"""


def test_a_stack_of_a_loss_dict_whose_keys_come_from_the_data_is_a_size_mismatch() -> None:
    [finding] = lint_source(LOSS_DICT.format(keys="    keys = sorted(data.keys())"))
    assert (finding.line, finding.kind) == (13, "size-mismatch")
    assert "the keys of `data`" in finding.why and 'under `if "aux" in outputs` (line 6)' in finding.why
    assert "all_gather_object" in finding.fix


def test_a_stack_over_keys_agreed_with_all_gather_object_is_quiet() -> None:
    agreed = (
        "    sets = [None] * dist.get_world_size()\n"
        "    dist.all_gather_object(sets, set(data))\n"
        "    keys = sorted(set().union(*sets))"
    )
    assert lint_source(LOSS_DICT.format(keys=agreed)) == []


PER_CLASS = """\
import lightning.pytorch as pl

class Classifier(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        losses = self.loss(x, y)
        metrics = {{}}
        for k in {classes}:
            metrics[f"loss_{{k}}"] = losses[y == k].sum()
        self.log_dict(metrics, sync_dist=True)
        for name, value in metrics.items():
            torch.distributed.all_reduce(value)
        return losses.mean()
"""


def test_one_collective_per_key_of_a_dict_keyed_by_the_data_is_a_data_dependent_count() -> None:
    found = lint_source(PER_CLASS.format(classes="y.unique().tolist()"))
    assert [(f.line, f.kind) for f in found] == [(10, "data-dependent-count"), (12, "data-dependent-count")]
    assert "one reduction per key of `metrics`" in found[0].why and "`y.unique().tolist()` (line 8)" in found[0].why


def test_the_same_keys_on_every_rank_make_the_same_collectives() -> None:
    assert lint_source(PER_CLASS.format(classes="range(3)")) == []


MONITOR = """\
import torch.distributed as dist

STAGES = {{0: ["a", "b"], 1: ["c"]}}

class Monitor:
    def __init__(self, gather_fn):
        self.metrics = {{}}
        self._gather = gather_fn

    def record(self, name, value):
        self.metrics[name] = value

    def aggregate(self):
{early}        return self._gather(self.metrics)

def gather_objects(obj):
    parts = [None] * dist.get_world_size()
    dist.all_gather_object(parts, obj)
    return parts

def run(rank):
    monitor = Monitor(gather_fn=gather_objects)
    for name in STAGES[rank]:
        monitor.record(name, 1.0)
    return monitor.aggregate()
"""


def test_an_early_return_on_object_state_a_rank_dependent_loop_filled_skips_a_callback_collective() -> None:
    [finding] = lint_source(MONITOR.format(early="        if not self.metrics:\n            return {}\n"))
    assert (finding.line, finding.kind, finding.condition) == (16, "hidden-collective", "not self.metrics")
    assert finding.collective == "self._gather -> dist.all_gather_object"


def test_a_callback_collective_every_rank_reaches_is_quiet() -> None:
    assert lint_source(MONITOR.format(early="")) == []


def test_a_method_of_an_object_of_a_class_of_the_file_is_followed() -> None:
    source = MONITOR.format(early="").replace(
        "    return monitor.aggregate()", "    if rank == 0:\n        monitor.aggregate()"
    )
    [finding] = lint_source(source)
    assert (finding.line, finding.kind) == (26, "hidden-collective")
    assert finding.collective == "monitor.aggregate -> self._gather -> dist.all_gather_object"


SEEDED = """\
import torch
import torch.distributed as dist

class Packer:
    def __init__(self, lengths, budget, generator=None):
        self.generator = generator
        order = torch.randperm(len(lengths){draw}).tolist()
        self.batches, batch, total = [], [], 0
        for i in order:
            if batch and total + lengths[i] > budget:
                self.batches.append(batch)
                batch, total = [], 0
            batch.append(i)
            total += lengths[i]
        self.batches.append(batch)

    def __iter__(self):
        return iter(self.batches)

    def __len__(self):
        return len(self.batches)

def train(lengths):
    rank = dist.get_rank()
    torch.manual_seed(1 + rank)
    packer = Packer(lengths, 24)
    for batch in packer:
        dist.all_reduce(torch.ones(1))
"""


def test_a_sampler_packed_from_a_random_state_seeded_per_rank_has_a_rank_dependent_length() -> None:
    [finding] = lint_source(SEEDED.format(draw=""))
    assert (finding.line, finding.kind) == (28, "rank-dependent-loop")
    assert "Packer.__len__ differs between ranks" in finding.condition
    assert "torch.manual_seed(1 + rank) at line 25" in finding.condition


def test_a_sampler_with_its_own_generator_is_quiet_although_the_process_is_seeded_per_rank() -> None:
    assert lint_source(SEEDED.format(draw=", generator=torch.Generator().manual_seed(0)")) == []


OBJECT_LIST = """\
import torch.distributed as dist

def resume(folder, list_shards):
    if dist.get_rank() == 0:
        shards = {mine}
    else:
        shards = [None]
    dist.broadcast_object_list(shards, src=0)
    return shards
"""


def test_an_object_list_of_one_placeholder_against_a_computed_list_is_a_size_mismatch() -> None:
    [finding] = lint_source(OBJECT_LIST.format(mine="list_shards(folder)"))
    assert (finding.line, finding.kind, finding.condition) == (8, "size-mismatch", "len(shards)")
    assert "1 element on some ranks (`[None]`, line 7)" in finding.why and "[value]" in finding.fix


def test_object_lists_of_the_same_length_on_every_rank_are_quiet() -> None:
    assert lint_source(OBJECT_LIST.format(mine="[list_shards(folder)]")) == []


FIRST = """\
from accelerate import Accelerator

def tokenize(examples, is_main):
    if is_main and any(len(e) > 10 for e in examples):
        {leave}
    return [len(e) for e in examples]

def prepare(raw):
    accelerator = Accelerator()
    with accelerator.main_process_first():
        data = tokenize(raw, accelerator.is_main_process)
    return data
"""


def test_a_raise_on_the_main_process_inside_main_process_first_skips_its_closing_barrier() -> None:
    [finding] = lint_source(FIRST.format(leave='raise ValueError("too long")'))
    assert (finding.line, finding.kind) == (10, "early-exit")
    assert finding.collective == "accelerator.main_process_first (its closing barrier)"
    assert "at line 5" in finding.why and "raise it after the block" in finding.fix


def test_a_return_inside_main_process_first_still_runs_its_closing_barrier() -> None:
    assert lint_source(FIRST.format(leave="return []")) == []


HELPER_RAISES = """\
from accelerate import Accelerator

accelerator = Accelerator()

def check(path):
    if not path.endswith(".json"):
        raise ValueError(path)

def prepare(path):
    with accelerator.main_process_first():
        if accelerator.is_main_process:
            check(path)
    accelerator.wait_for_everyone()
    return path
"""


def test_a_helper_that_raises_on_the_main_process_inside_main_process_first_is_named_at_the_with() -> None:
    """review51b: the raise came through a helper called under the rank test; lint said the others wait in the
    later wait_for_everyone, but they wait in the block's opening barrier and never reach it."""
    [finding] = lint_source(HELPER_RAISES)
    assert (finding.line, finding.kind) == (10, "early-exit")
    assert finding.collective == "accelerator.main_process_first (its closing barrier)"
    assert "(`check(path)` at line 12, which can raise)" in finding.why
    assert "wait in the barrier it made them enter first" in finding.why


RAISE_INSIDE = """\
{imports}

def prepare(raw, rank, training_args):
    with {receiver}main_process_first():
        if rank == 0 and not raw:
            raise ValueError("no data")
        return [len(r) for r in raw]
"""


@pytest.mark.parametrize(
    "imports, receiver, reported",
    [
        ("from accelerate import PartialState", "PartialState().", True),
        ("from accelerate.state import PartialState\nstate = PartialState()", "state.", True),
        ("from accelerate import Accelerator\naccelerator = Accelerator()", "accelerator.", True),
        ("import barrierlab as bl", "bl.", False),  # it tells the other ranks that the main process failed
        ("from barrierlab import main_process_first", "", False),
        ("import transformers", "training_args.", False),  # its closing barrier is in a finally
    ],
)
def test_a_raise_inside_main_process_first_is_reported_only_for_accelerates(imports, receiver, reported) -> None:
    """review16b: the closing barrier is skipped by an exception only in Accelerate's ``_goes_first``; barrierlab's
    helper releases the others with the main process's error (they raise at once), transformers' makes its
    closing barrier in a ``finally``."""
    findings = lint_source(RAISE_INSIDE.format(imports=imports, receiver=receiver))
    assert bool([f for f in findings if f.kind == "early-exit"]) is reported, findings


PAYLOAD = """\
import pickle
import torch.distributed as dist

def all_gather_list(data, max_size=16384):
    payload = pickle.dumps(data)
    if len(payload) > max_size:
        raise ValueError("too large")
    dist.all_reduce(payload)
    return payload

def step(rank, ids):
    output = {{"ids": {ids}}}
    return all_gather_list(output, max_size=2048)
"""


def test_a_helper_that_raises_on_its_argument_given_a_rank_dependent_one_is_an_early_exit() -> None:
    [finding] = lint_source(PAYLOAD.format(ids="list(range(1500 if rank == 1 else 6))"))
    assert (finding.line, finding.kind) == (13, "hidden-collective")
    assert "len(payload) > max_size, on output, which differs between ranks" in finding.condition


def test_a_helper_that_raises_on_its_argument_given_the_same_one_everywhere_is_quiet() -> None:
    assert lint_source(PAYLOAD.format(ids="list(range(6))")) == []


def test_a_module_call_or_a_progress_bar_under_a_rank_test_changes_no_rank_dependent_value() -> None:
    source = """\
import os
import torch.distributed as dist

def train(loader, bar, path):
    rank = dist.get_rank()
    for batch in loader:
        dist.all_reduce(batch)
        if rank == 0:
            bar.update(1)
            os.remove(path)
    for batch in bar:
        dist.all_reduce(batch)
    data = os.path.join(path, "x")
    if data:
        dist.barrier()
"""
    assert lint_source(source) == []


def test_a_function_nested_in_a_function_of_the_same_name_does_not_loop() -> None:
    source = """\
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def wrapper(model):
    ddp = DDP(model)
    def wrapper(x):
        return ddp(x)
    return wrapper
"""
    assert lint_source(source) == []


# --- rules for code lint was not tuned on (round 6 of tests/realworld): except paths, loop exits on a rank's
# own model output, dtypes and shapes from per-rank data, group-local ranks; each has a bad_/good_ pair in
# tests/lint_corpus, checked line by line above. These check what the findings say.


def _one(name: str, line: int, collective: str = "") -> Finding:
    [finding] = [f for f in lint_file(CORPUS / name) if f.line == line and collective in f.collective]
    return finding


def test_a_collective_in_an_except_handler_names_the_try_and_suggests_a_reduced_flag() -> None:
    finding = _one("bad_except_handler_collectives.py", 24, "barrier")
    assert finding.kind == "except-path" and finding.condition == "except torch.cuda.OutOfMemoryError"
    assert "handler of the `try` at line 20" in finding.why and "whose own `try` raised" in finding.why
    assert "all_reduce the flag (ReduceOp.MAX)" in finding.fix


def test_a_finally_barrier_under_a_flag_set_in_except_is_a_branch() -> None:
    finding = _one("bad_except_handler_collectives.py", 38)
    assert finding.kind == "branch" and finding.condition == "succeeded"
    assert "`succeeded` is set in an except handler" in finding.why
    assert finding.fix.startswith("agree on `succeeded` first")


def test_a_handler_that_only_sets_a_flag_is_quiet() -> None:
    source = """
import torch.distributed as dist

def step(work):
    failed = 0
    try:
        work()
    except RuntimeError:
        failed = 1
    flag = torch.tensor([failed])
    dist.all_reduce(flag)
    if flag.item():
        dist.barrier()
"""
    assert lint_source(source) == []
    assert [f.kind for f in lint_source(source.replace("failed = 1", "dist.barrier()"))] == ["except-path"]


def test_a_loop_exit_on_the_ranks_own_model_output_says_so_and_suggests_synced_gpus() -> None:
    finding = _one("bad_generate_local_eos_fsdp.py", 19)
    assert finding.kind == "early-exit" and finding.condition == "(next_token == eos_token_id).all()"
    assert "this rank's own model output (`model(ids)` at line 19)" in finding.why
    assert "synced_gpus=True" in finding.fix and "all_reduce a 'done' flag" in finding.fix


def test_an_early_return_on_the_ranks_own_loss_outside_a_loop_is_an_exit_too() -> None:
    """Modelled on torchaudio's HuBERT ``training_step`` (pytorch/audio issue #3749, round 36): a step function
    returns on an inf/NaN loss before the all_gather every rank makes; the loop is its caller's."""
    source = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Module:
    def __init__(self, model):
        self.model = DDP(model)

    def training_step(self, batch):
        loss = self.model(batch).sum()
        if torch.isnan(loss):
            return None
        count = torch.ones(1)
        dist.all_reduce(count)
        loss.backward()
        return loss

def fit(module, batches):
    for batch in batches:
        module.training_step(batch)
"""
    findings = lint_source(source)
    assert [(f.line, f.kind) for f in findings] == [(15, "early-exit"), (16, "early-exit")], findings  # + DDP backward
    finding = findings[0]
    assert finding.condition == "torch.isnan(loss)" and "this rank's own model output" in finding.why
    assert finding.fix.startswith("decide the return together: all_reduce a flag of `torch.isnan(loss)`")
    agreed = source.replace(
        "if torch.isnan(loss):", "bad = torch.isnan(loss).float()\n        dist.all_reduce(bad)\n        if bad.item():"
    )
    assert lint_source(agreed) == []


def test_a_loop_exit_on_a_module_of_the_file_reaches_its_forward() -> None:
    source = """
import torch
import torch.distributed as dist

class Sharded(torch.nn.Module):
    def forward(self, ids):
        parts = [torch.empty(2) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, torch.ones(2))
        return torch.cat(parts)[ids]

def decode(model, ids):
    for _ in range(8):
        token = model(ids).argmax()
        if token.item() == 0:
            break
    return ids

def main():
    return decode(Sharded(), torch.tensor([dist.get_rank()]))
"""
    [finding] = lint_source(source)
    assert (finding.line, finding.kind) == (13, "hidden-collective")
    assert finding.collective == "model -> dist.all_gather"
    # the same prompt on every rank (tensor parallel): the sharded model computes the same tokens everywhere
    assert lint_source(source.replace("torch.tensor([dist.get_rank()])", "torch.tensor([1])")) == []
    agreed = source.replace(
        "if token.item() == 0:", "done = token.clone()\n        dist.all_reduce(done)\n        if done.item() == 0:"
    )
    assert lint_source(agreed) == []


def test_a_tensor_of_an_accumulator_without_dtype_may_differ_per_rank() -> None:
    finding = _one("bad_tensor_from_per_rank_values.py", 25)
    assert finding.kind == "dtype-mismatch"
    assert "`self.sum` adds up per-rank values (`self.sum += val * n`, line 20)" in finding.why
    assert "may differ per rank" in finding.why and "dtype=torch.float64" in finding.fix


def test_a_numpy_value_in_a_tensor_without_dtype_may_differ_per_rank() -> None:
    """review79l C4/C5: a numpy scalar whose type a test on the rank picks is reported (rank 0's float32 against
    rank 1's float64 aborted gloo: "8 vs 4"); a numpy call alone is not (np.mean of a bool or float64 array is a
    numpy.float64 on every rank: `torch.tensor(np.mean(np.ones(3) * rank))` ran on 2 ranks, both float64)."""
    source = """
import numpy as np
import torch
import torch.distributed as dist

def mean_match(preds, labels):
    value = torch.tensor([np.mean(preds == labels)])
    dist.all_reduce(value)
    return value
"""
    assert lint_source(source) == []
    assert lint_source(source.replace("np.mean(preds == labels)", "np.mean(np.ones(3) * dist.get_rank())")) == []
    picked = """
import numpy as np
import torch
import torch.distributed as dist

def main():
    rank = dist.get_rank()
    x = np.float32(1.5) if rank == 0 else np.float64(2.5)
    t = torch.tensor(x)
    dist.all_reduce(t)
"""
    [finding] = lint_source(picked)
    assert (finding.line, finding.kind) == (10, "dtype-mismatch")
    assert "a numpy.float32 on the ranks where `rank == 0` is true and a numpy.float64 on the others" in finding.why
    assert lint_source(picked.replace("np.float64(2.5)", "np.float32(2.5)")) == []
    assert lint_source(picked.replace("torch.tensor(x)", "torch.tensor(x, dtype=torch.float64)")) == []
    top = textwrap.dedent(picked.replace("def main():\n", "")).replace("\n    ", "\n")  # a script's top level
    assert [f.kind for f in lint_source(top)] == ["dtype-mismatch"]
    inline = picked.replace("torch.tensor(x)", "torch.tensor(np.float32(1.5) if rank == 0 else 2.5)")
    assert [f.kind for f in lint_source(inline)] == ["dtype-mismatch"]


def test_a_padded_batch_gathered_suggests_gathering_the_count() -> None:
    finding = _one("bad_tensor_from_per_rank_values.py", 33)
    assert finding.kind == "size-mismatch" and finding.condition == 'shape of batch["input_ids"]'
    assert "may differ per rank" in finding.why
    assert 'batch["input_ids"].numel()' in finding.fix and "pad_across_processes" in finding.fix


def test_a_group_local_dst_names_the_global_rank_fix() -> None:
    finding = _one("bad_group_local_dst.py", 12)
    assert finding.kind == "group-rank" and finding.condition == "dst=0 with group=node_group"
    assert "global rank even with `group=`" in finding.why and "line 13" in finding.why
    assert "dist.get_global_rank(node_group, 0)" in finding.fix and "group_dst=0" in finding.fix


def test_a_dst_compared_with_the_group_rank_is_group_local() -> None:
    source = """
import torch
import torch.distributed as dist

def gather_logits(x, group, dst=0):
    out = [torch.empty_like(x) for _ in range(dist.get_world_size(group))] if dist.get_rank(group) == dst else None
    dist.gather(x, out, dst=dst, group=group)
    return out
"""
    [finding] = lint_source(source)
    assert finding.kind == "group-rank" and "compares it with dist.get_rank(group)" in finding.why
    fixed = source.replace("dst=dst, group", "dst=dist.get_global_rank(group, dst), group")
    assert lint_source(fixed) == []


def test_a_literal_root_tested_against_a_named_group_rank_is_group_local() -> None:
    """verl-project/verl PR #5701 (corpus round 35): the replica leader (``tp_rank == 0``) fills the list, and every
    replica's group broadcasts it from ``src=0``, global rank 0, which only the first replica's group holds."""
    source = """
import torch.distributed as dist

def share_requests(prompts, group, tp_rank):
    holder = [None]
    if tp_rank == 0:
        holder[0] = list(prompts)
    dist.broadcast_object_list(holder, src=0, group=group)
    return holder[0]
"""
    [finding] = lint_source(source)
    assert finding.kind == "group-rank" and "tests `tp_rank == 0` at line 6" in finding.why, finding.why
    assert lint_source(source.replace("src=0, group", "src=dist.get_global_rank(group, 0), group")) == []
    assert lint_source(source.replace("tp_rank == 0", "dist.get_rank() == 0")) == []  # a global rank: not this kind


def test_a_shard_of_a_constant_length_is_decided_by_the_stated_world_size() -> None:
    source = """
import torch.distributed as dist

WORLD_SIZE = 2

def run(rank, world):
    for item in list(range(N))[rank::world]:
        dist.all_reduce(item)
"""
    assert lint_source(source.replace("N", "64")) == []  # 32 items on each of 2 ranks
    assert [f.kind for f in lint_source(source.replace("N", "5"))] == ["rank-dependent-loop"]
    unstated = source.replace("WORLD_SIZE = 2", "")
    assert lint_source(unstated.replace("N", "64")) == []  # a multiple of 2, 4 and 8 ranks
    assert [f.kind for f in lint_source(unstated.replace("N", "12"))] == ["rank-dependent-loop"]  # 8 ranks


def test_a_shard_of_data_lint_cannot_measure_is_quiet() -> None:
    source = """
import torch.distributed as dist

def run(load):
    rank, world = dist.get_rank(), dist.get_world_size()
    x = load()
    shard = x[rank::world]
    for start in range(0, shard.shape[0], 8):
        dist.all_reduce(shard[start:start + 8])
"""
    assert lint_source(source) == []


def test_a_subgroup_gather_through_a_helper_under_its_members_test_is_quiet() -> None:
    source = """
import torch
import torch.distributed as dist

TP = 2

def build():
    groups = [dist.new_group(list(range(s, s + TP))) for s in range(0, dist.get_world_size(), TP)]
    return groups[dist.get_rank() // TP]

def gather(x, group):
    dist.all_gather([torch.empty_like(x) for _ in range(TP)], x, group=group)

def step(x, group):
    stage = dist.get_rank() // TP
    if stage != 0:
        gather(x, group)

def main():
    group = build()
    step(torch.ones(1), group)
"""
    assert lint_source(source) == []
    uneven = source.replace("stage != 0", "dist.get_rank() % TP == 0")
    assert [f.kind for f in lint_source(uneven)] == ["hidden-collective"]


def test_a_helpers_raise_is_reported_at_its_file_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lint_function follows a helper through ``__globals__``: its raise is named by the line of the helper's
    file (line 8 here), not by its line within the helper's own source (3)."""
    path = tmp_path / "helper_raise_mod.py"
    path.write_text(
        "# a module whose helper does not start on line 1\n\n\n\n\n"
        "def load_batch(rank, step, bad_rank, bad_step):\n"
        "    if rank == bad_rank and step == bad_step:\n"
        "        raise ValueError('corrupt record')\n"
        "    return step\n\n\n"
        "def scenario(dist, bad_rank=1, bad_step=2):\n"
        "    rank = dist.get_rank()\n"
        "    for step in range(4):\n"
        "        grad = load_batch(rank, step, bad_rank, bad_step)\n"
        "        dist.all_reduce(grad)\n"
    )
    spec = importlib.util.spec_from_file_location("helper_raise_mod", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "helper_raise_mod", module)
    spec.loader.exec_module(module)
    [finding] = lint_function(module.scenario)
    assert finding.line == 16
    assert finding.condition.startswith("load_batch() raises (line 8) when ")
    [same] = lint_file(path)
    assert same.condition == finding.condition


def test_a_loop_left_on_a_helpers_local_loss_is_flagged_and_an_agreed_one_is_not() -> None:
    """A helper returning this rank's own loss (``loss.item()`` of a DDP model's output) makes a ``break`` on it
    rank-dependent; a helper that all-reduces the loss before returning it does not. Modelled on the training
    step / early stop split of pytorch/examples regression/main.py, written here."""
    source = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train_step(model, optimizer, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def fit(module, optimizer, loader):
    model = DDP(module)
    for x, y in loader:
        if train_step(model, optimizer, x, y) < 0.01:
            break
"""
    [finding] = lint_source(source)
    assert (finding.line, finding.kind, finding.condition) == (
        17,
        "hidden-collective",
        "train_step(model, optimizer, x, y) < 0.01",
    )
    agreed = source.replace(
        "    return loss.item()",
        "    mean = loss.detach().clone()\n    dist.all_reduce(mean)\n    return mean.item()",
    )
    assert lint_source(agreed) == []


def test_generated_sequences_gathered_without_padding_may_differ_per_rank() -> None:
    """Modelled on the generation loop of transformers' examples/pytorch/summarization/
    run_summarization_no_trainer.py (which pads across processes before gather_for_metrics), written here."""
    source = """
from accelerate import Accelerator


def predict(model, loader, tokenizer):
    accelerator = Accelerator()
    texts = []
    for batch in loader:
        tokens = accelerator.unwrap_model(model).generate(batch["input_ids"], max_new_tokens=64)
        tokens = accelerator.gather_for_metrics(tokens)
        texts += tokenizer.batch_decode(tokens)
    return texts
"""
    [finding] = lint_source(source)
    assert (finding.line, finding.kind) == (10, "size-mismatch") and "may differ per rank" in finding.why
    assert "pad_across_processes(tokens, dim=1" in finding.fix
    padded = source.replace(
        "        tokens = accelerator.gather_for_metrics(tokens)",
        "        tokens = accelerator.pad_across_processes(tokens, dim=1, pad_index=tokenizer.pad_token_id)\n"
        "        tokens = accelerator.gather_for_metrics(tokens)",
    )
    assert lint_source(padded) == []


def test_a_notebook_with_a_huge_number_in_its_metadata_is_linted(tmp_path):
    """attack10 a06: a 5,000-digit number in the metadata (valid JSON) is more than Python converts to an int;
    lint crashed with a traceback (exit 1) and never linted the next file. Its cells are what lint reads."""
    notebook = tmp_path / "seeded.ipynb"
    cell = {"cell_type": "code", "metadata": {}, "source": BAD, "outputs": [], "execution_count": 1}
    notebook.write_text(
        '{"cells": [' + json.dumps(cell) + '], "metadata": {"seed": ' + "7" * 5000 + "}, "
        '"nbformat": 4, "nbformat_minor": 5}'
    )
    deep = tmp_path / "deep.ipynb"
    deep.write_text('{"cells": [], "metadata": ' + "[" * 100000 + "]" * 100000 + "}")
    done = lint_command(notebook, deep, CORPUS / "bad_is_main_process_barrier.py")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        f"barrierlab lint: cannot lint {deep}: not a notebook: its JSON is nested too deeply"
    ]
    assert f"{notebook}:cell 1, line" in done.stdout and "bad_is_main_process_barrier.py" in done.stdout, done.stdout


def test_a_notebook_of_millions_of_json_lists_is_refused_before_it_is_parsed(tmp_path):
    """attack10 a07: 57 MB of ``[]`` in a notebook peaked lint at 1.47 GB, parsed before the code-size bound."""
    from barrierlab import lint

    flood = tmp_path / "flood.ipynb"
    flood.write_text('{"cells": [], "metadata": {"x": [' + "[]," * (lint.MAX_JSON_CONTAINERS + 1) + "[]]}}")
    done = lint_command(flood, CORPUS / "bad_is_main_process_barrier.py")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith(f"barrierlab lint: cannot lint {flood}: not a notebook lint reads:"), done.stderr
    assert "bad_is_main_process_barrier.py" in done.stdout


def test_a_fixed_size_buffer_filled_by_slice_on_one_rank_is_no_data_keyed_dict() -> None:
    """mmengine's ``collect_results_cpu`` (round 14): rank 0 writes a folder name into a 512-byte tensor every rank
    made alike, then broadcasts it; a slice assignment adds no key, so the size is the same everywhere."""
    source = """\
import torch
import torch.distributed as dist

def shared_dir(path, rank):
    buf = torch.full((512,), 32, dtype=torch.uint8)
    if rank == 0:
        encoded = torch.tensor(bytearray(path.encode()), dtype=torch.uint8)
        buf[:len(encoded)] = encoded
    dist.broadcast(buf, 0)
    return buf
"""
    assert lint_source(source) == []


STORE_BARRIER = """\
import os
import torch
import torch.distributed as dist
from torch.distributed.elastic.utils import store as store_util

def prepare(path, store):
    if dist.get_rank() == 0:
        torch.save(torch.zeros(3), path)
    {between}
    return torch.load(path)
"""


def test_torchs_store_barrier_orders_a_write_before_the_reads_and_is_a_collective_of_every_rank() -> None:
    """round 14: ``torch.distributed.elastic.utils.store.barrier`` is a barrier through the store."""
    between = "store_util.barrier(store, dist.get_world_size(), key_prefix='prep/')"
    assert lint_source(STORE_BARRIER.format(between=between)) == []
    [race] = lint_source(STORE_BARRIER.format(between="pass"))
    assert race.kind == "file-race"
    [branch] = lint_source(STORE_BARRIER.format(between="if dist.get_rank() == 0: " + between))
    assert (branch.kind, branch.line) == ("branch", 9)


FINALIZER = """\
import torch
import torch.distributed as dist

class Meter:
    def __init__(self):
        self.total = torch.zeros(2)

    def all_reduce(self):
        dist.all_reduce(self.total)

    def __del__(self):
        {body}
"""


@pytest.mark.parametrize(
    "body, line", [("self.all_reduce()", 12), ("dist.all_reduce(self.total)", 12), ("print(self.total)", None)]
)
def test_a_collective_in_del_runs_when_each_rank_frees_the_object(body, line) -> None:
    """round 14 (pytorch/examples' AverageMeter.all_reduce moved into __del__): ranks free objects at moments of
    their own."""
    findings = lint_source(FINALIZER.format(body=body))
    assert [(f.kind, f.line) for f in findings] == ([("finalizer", line)] if line else [])


RETRY = """\
import functools
import time
import torch.distributed as dist

def retry(times=3):
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for attempt in range(times):
                try:
                    return fn(*args, **kwargs)
                except OSError:
                    {handler}
        return wrapper
    return decorator

@retry(times=3)
def resume(storage):
    box = [storage.latest() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return storage.read(box[0])

def load(storage):
    for attempt in range(3):
        try:
            box = [None]
            dist.broadcast_object_list(box, src=0)
            return storage.read(box[0])
        except OSError:
            {handler}
"""


@pytest.mark.parametrize(
    "handler, lines",
    [
        ("time.sleep(0.1)", [20, 27]),
        ("if attempt == 2: raise", [20, 27]),  # the last attempt raises; the earlier ones go on
        ("raise", []),
    ],
)
def test_a_collective_inside_a_retried_try_runs_again_on_the_rank_that_failed(handler, lines) -> None:
    """round 14 (vjepa2's robust_checkpoint_loader): a retry decorator, or a retry loop, around a function that
    makes a collective: the rank whose read failed makes the collective again, alone."""
    findings = lint_source(RETRY.format(handler=handler))
    assert sorted(f.line for f in findings if f.kind == "retry") == lines, findings


@pytest.mark.parametrize(
    "test, reported",
    [
        ("rank == 0", True),
        ("accelerator.is_main_process", True),
        ("rank != 0", False),
        ("not accelerator.is_main_process", False),
    ],
)
def test_a_raise_only_the_other_ranks_can_make_inside_main_process_first_leaves_nobody_waiting(test, reported):
    """review20b: in Accelerate's main_process_first the other ranks enter the block after the main process made
    its closing barrier, so their raise leaves nobody waiting; a raise the main process can make does."""
    source = f"""\\
from accelerate import Accelerator

def prepare(raw, rank):
    accelerator = Accelerator()
    with accelerator.main_process_first():
        if {test}:
            raise ValueError("no data")
        return [len(r) for r in raw]
"""
    findings = [f for f in lint_source(source) if f.kind == "early-exit"]
    assert bool(findings) is reported, findings


def test_a_finding_names_the_line_of_its_condition_when_it_is_another():
    """The collective and the test that only some ranks take are often lines apart (an `if` above, a `break`
    below): the finding says where the test is, and the report shows it."""
    source = (
        "import torch.distributed as dist\n"
        "\n"
        "def save(rank, loader):\n"
        "    if rank == 0:\n"
        "        print('saving')\n"
        "        dist.barrier()\n"
        "    seen = 0\n"
        "    for x, y in loader:\n"
        "        dist.all_reduce(x)\n"
        "        seen += int(y.sum())\n"
        "        if seen >= 10:\n"
        "            break\n"
        "    if rank == 1: dist.barrier()\n"
    )
    findings = {f.line: f for f in lint_source(source)}
    assert findings[6].condition_line == 4
    assert findings[9].condition_line == 11  # the loop's exit, below the collective
    assert findings[13].condition_line is None  # the same line
    text = report(list(findings.values()))
    assert "condition: rank == 0 (line 4)" in text and "condition: seen >= 10 (line 11)" in text


# Modelled on Megatron-LM's megatron/core/timers.py: ``get_timers()`` hands back the global ``Timers``, whose
# ``__call__`` returns ``self._timers[name]``, a ``Timer`` whose ``start(barrier=...)`` runs a barrier first.
TIMERS = """\
import torch.distributed as dist

class Timer:
    def start(self, barrier=False):
        if barrier:
            dist.barrier()

class Timers:
    def __init__(self):
        self._timers = {}

    def __call__(self, name):
        if name not in self._timers:
            self._timers[name] = Timer()
        return self._timers[name]

_GLOBAL = Timers()

def get_timers():
    return _GLOBAL

def step(rank):
    timers = get_timers()
    if rank == 0:
        timers("samples").start(barrier=BARRIER)
"""


def test_a_method_of_an_object_a_function_of_the_file_returns_is_followed() -> None:
    [finding] = lint_source(TIMERS.replace("BARRIER", "True"))
    assert (finding.line, finding.kind, finding.condition) == (25, "hidden-collective", "rank == 0")
    assert finding.collective == "timers(...).start -> dist.barrier"


@pytest.mark.parametrize("given", ["False", "None"])
def test_a_call_that_turns_its_functions_collective_off_with_a_false_constant_is_quiet(given: str) -> None:
    assert lint_source(TIMERS.replace("BARRIER", given)) == []
    assert lint_source(TIMERS.replace("barrier=BARRIER", "")) == []  # the default, False


def test_a_gate_parameter_given_a_value_lint_cannot_tell_is_still_followed() -> None:
    [finding] = lint_source(TIMERS.replace("barrier=BARRIER", "barrier=rank > 0"))
    assert finding.line == 25


def test_an_object_a_returning_function_hands_back_kept_in_a_name_is_followed() -> None:
    source = TIMERS.replace('        timers("samples").start(barrier=BARRIER)', "        timer.start(True)").replace(
        "    if rank == 0:", '    timer = timers("samples")\n    if rank == 0:'
    )
    [finding] = lint_source(source)
    assert (finding.line, finding.collective) == (26, "timer.start -> dist.barrier")


# Modelled on the activation-statistics monitors of timm's and HF's training scripts: a forward hook that
# all-reduces a statistic, registered through a helper method on some ranks only.
HOOKS = """\
import torch
import torch.distributed as dist

class Monitor:
    def _hook(self, name):
        def hook(module, inputs, output):
            dist.all_reduce(output.detach().mean().reshape(1))
        return hook

    def attach(self, model):
        for name, layer in model.named_modules():
            layer.REGISTER(self._hook(name))

def evaluate(model, rank):
    monitor = Monitor()
    if rank == 0:
        monitor.attach(model)
    model(torch.ones(2, 2))
"""


@pytest.mark.parametrize(
    ("register", "moment"),
    [
        ("register_forward_hook", "forward of the module"),
        ("register_full_backward_hook", "backward through the module"),
    ],
)
def test_a_hook_that_runs_a_collective_registered_on_some_ranks_is_found(register: str, moment: str) -> None:
    [finding] = lint_source(HOOKS.replace("REGISTER", register))
    assert (finding.line, finding.condition) == (17, "rank == 0")
    assert finding.collective == f"monitor.attach -> layer.{register}(hook) -> dist.all_reduce"
    assert f"in the hook registered here, run at every {moment}" in finding.why


def test_a_hook_registered_on_every_rank_is_quiet() -> None:
    assert (
        lint_source(
            HOOKS.replace("REGISTER", "register_forward_hook")
            .replace("    if rank == 0:\n        monitor", "    monitor")
            .replace("        monitor.attach", "    monitor.attach")
        )
        == []
    )


def test_a_loop_without_collectives_inside_one_ranks_branch_does_not_unbalance_it() -> None:
    """Round 16's correct_tempdir_barrier_inside_with (modelled on mmcv's collect_results_cpu): rank 0 writes
    the others' shards in a loop, then makes the same broadcast and barrier the others make on their own path."""
    source = """\
import torch.distributed as dist

def prepare(rank, world_size, shards):
    if rank == 0:
        for r in range(1, world_size):
            shards[r].save()
        dist.broadcast_object_list([1], src=0)
        dist.barrier()
        return shards[0]
    holder = [None]
    dist.broadcast_object_list(holder, src=0)
    dist.barrier()
    return holder
"""
    assert lint_source(source) == []
    [finding, *_] = lint_source(
        source.replace("    holder = [None]\n    dist.broadcast_object_list(holder, src=0)\n", "")
    )
    assert finding.line == 7


# Round 16's correct_stats_broadcast_read_from_list (modelled on pytorch/pytorch#56142's broadcast_object_list
# usage): a table of 90 rows dealt to 3 ranks with ``x[rank::world]``, then normalised in place.
RESHARDED = """\
import torch
import torch.distributed as dist
WORLD_SIZE = 3

def load():
    x = torch.randn(ROWS, 6) * 2.0 + 1.0
    return x, x.sum(1)

def train(rank, world_size):
    x, y = load()
    x = SHARE
    x = (x - 1.0) / 2.0
    for i in range(0, len(x), 10):
        dist.all_reduce(x[i:i + 10].sum().reshape(1))
"""


@pytest.mark.parametrize(
    ("rows", "share", "flagged"),
    [
        (90, "x[rank::world_size]", False),  # 30 rows on each of the 3 ranks
        (91, "x[rank::world_size]", True),  # 31, 30, 30
        (90, "x[rank:]", True),  # 90, 89, 88
    ],
)
def test_a_name_reassigned_in_straight_line_code_has_the_length_of_its_last_assignment(rows, share, flagged):
    findings = lint_source(RESHARDED.replace("ROWS", str(rows)).replace("SHARE", share))
    assert bool(findings) is flagged, findings


@pytest.mark.parametrize("last", ["case _:", "case other:"])
def test_a_match_whose_last_case_takes_the_rest_is_an_else(last: str) -> None:
    """attack15 a09: a barrier in every case of `match rank:` ending in `case _:` was flagged; if/else was not."""
    source = f"""\
import torch.distributed as dist

def sync(rank):
    match rank:
        case 0:
            dist.barrier()
        {last}
            dist.barrier()
"""
    assert lint_source(source) == []
    [finding] = lint_source(
        source.replace("        case 0:\n            dist.barrier()", "        case 0:\n            pass")
    )
    assert finding.line == 8


def test_a_pipeline_stages_send_first_function_that_only_one_rank_runs_is_not_a_p2p_order_hang() -> None:
    """Round 17's correct_pipeline_send_cast_to_pipeline_dtype (modelled on Megatron-LM's p2p_communication): stage 0
    sends then receives, stage 1 receives then sends, each in its own function called under a rank test."""
    source = """\
import torch
import torch.distributed as dist

def run_stage0(h):
    dist.send(h, dst=1)
    dist.recv(h, src=1)

def run_stage1(h):
    dist.recv(h, src=0)
    dist.send(h, dst=0)

def step(rank):
    h = torch.zeros(2)
    if rank == 0:
        run_stage0(h)
    else:
        run_stage1(h)
"""
    assert lint_source(source) == []
    every_rank = lint_source(
        source.replace(
            "    if rank == 0:\n        run_stage0(h)\n    else:\n        run_stage1(h)", "    run_stage0(h)"
        )
    )
    assert ("p2p-order", 5) in [(f.kind, f.line) for f in every_rank]  # every rank sends first: the hang


# Round 18's correct_mixture_restart_exhausted_source (modelled on HF datasets' interleave_datasets): a mixture
# generator that restarts a source this rank used up never ends by itself; the loop ends on a step cap that is the
# same on every rank, although each rank mixes its own shard.
MIXTURE = """\
import random
import torch
import torch.distributed as dist

def mixture(sources, seed):
    rng = random.Random(seed)
    iters = [iter(s) for s in sources]
    while True:
        i = rng.randrange(len(sources))
        try:
            batch = next(iters[i])
        except StopIteration:
            iters[i] = iter(sources[i])
            batch = next(iters[i])
        yield batch

def train(rank, world):
    mine = list(range(rank, 20, world))
    for step, batch in enumerate(mixture([mine, mine[:2]], seed=1)):
        if CAP:
            break
        dist.all_reduce(torch.ones(1))
"""


@pytest.mark.parametrize(
    ("cap", "ending", "flagged"),
    [
        ("step >= 8", "", False),  # the enumerate counter is the same on every rank
        ("batch > 10", "", True),  # this rank's own data decides
        ("step >= 8", "        if i == 9:\n            return\n", True),  # a generator that can end is not endless
    ],
)
def test_an_endless_generator_of_the_file_and_an_enumerate_counter(cap, ending, flagged):
    source = MIXTURE.replace("CAP", cap).replace("        yield batch\n", "        yield batch\n" + ending)
    assert bool(lint_source(source)) is flagged, lint_source(source)


@pytest.mark.parametrize(
    ("stop", "flagged"),
    [
        ("len(torch.randn(8 * world * 4, 6))", False),  # 32 * world rows in blocks of 4: 8 blocks each
        ("30 * world", True),  # 60 rows on 2 ranks: 8 and 7 blocks
        ("len(data)", True),  # unknown length
    ],
)
def test_blocks_of_c_items_dealt_round_robin(stop, flagged):
    """Round 18's correct_rng_resume_suppress_read_only: ``range(4 * rank, n, 4 * world)`` deals blocks of 4."""
    source = f"""\
import torch
import torch.distributed as dist

def train(rank, world, data):
    for i in range(4 * rank, {stop}, 4 * world):
        dist.all_reduce(torch.ones(1))
"""
    assert bool(lint_source(source)) is flagged, lint_source(source)


@pytest.mark.parametrize(
    ("guard", "buffers", "flagged"),
    [
        ("with torch.no_grad():", "", False),  # a forward without gradients of a model without buffers: nothing
        ("if True:", "", True),  # with gradients the first forward after a backward rebuilds the buckets
        ("with torch.no_grad():", "model.register_buffer('scale', torch.ones(1))\n    ", True),  # buffers: broadcast
    ],
)
def test_a_helpers_ddp_forward_called_with_gradients_off(guard, buffers, flagged):
    """Round 19's correct_eval_stats_fresh_dict: rank 0 previews ``evaluate(model, ...)``, which calls
    ``task_loss(model, x)`` inside ``torch.no_grad()``; the helper's only collective is the DDP forward."""
    source = f"""\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def task_loss(model, x):
    return model(x).sum()

def evaluate(model, batches):
    total = 0.0
    {guard}
        for x in batches:
            total += task_loss(model, x).item()
    return total

def train(rank, batches):
    model = torch.nn.Linear(4, 1)
    {buffers}model = DDP(model)
    for x in batches:
        task_loss(model, x).backward()
    if rank == 0:
        evaluate(model, batches)
    dist.barrier()
"""
    assert bool(lint_source(source)) is flagged, lint_source(source)


@pytest.mark.parametrize(("passed", "flagged"), [("-1", False), ("rank", True), ("0", True)])
def test_constants_passed_down_turn_a_helpers_rank_tests_off(passed, flagged):
    """Round 19's YOLOv5 twin: ``create_dataloader(..., rank=-1)`` on rank 0 alone enters
    ``torch_distributed_zero_first(rank)``, whose barriers run only for ranks other than -1."""
    source = f"""\
import contextlib
import torch.distributed as dist

@contextlib.contextmanager
def zero_first(local_rank):
    if local_rank not in (-1, 0):
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()

def create_dataloader(path, rank=-1):
    with zero_first(rank):
        data = list(range(10))
    return data

def train(rank):
    loader = create_dataloader("train", rank=rank)
    if rank in (-1, 0):
        val = create_dataloader("val", rank={passed})
    dist.barrier()
"""
    findings = lint_source(source)
    assert any(f.line == 20 for f in findings) is flagged, findings


SANITY_CHECK = """
import torch.distributed as dist

def validate(meter):
    dist.all_reduce(meter)

def worker(meter, expected):
    rank = dist.get_rank()
    for epoch in range(3):
        validate(meter)
        if rank == 0:
            print("epoch", epoch)
            if int(meter.sum()) != expected:
                raise RuntimeError("the meter counted the wrong number of samples")
    dist.barrier()
"""


def test_a_sanity_check_raise_under_a_rank_test_is_taken_as_an_assert():
    """Round 18's meter reset: ``if <check>: raise XError(...)`` with a check the same on every rank is an assert
    written out; lint takes asserts as no way out of the function, and so this too."""
    assert lint_source(SANITY_CHECK, "train.py") == []
    assert lint_source(SANITY_CHECK.replace("int(meter.sum()) != expected", "rank == 0"), "train.py") != []
    as_assert = SANITY_CHECK.replace(
        "            if int(meter.sum()) != expected:\n                raise RuntimeError(",
        "            assert int(meter.sum()) == expected, (",
    )
    assert lint_source(as_assert, "train.py") == []


SENTINEL = """
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

def create_dataloader(dataset, batch_size, rank=-1):
    sampler = None if rank == -1 else DistributedSampler(dataset)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler), dataset

def worker(dataset, model):
    rank = dist.get_rank()
    loader, data = create_dataloader(dataset, 8, rank=rank)
    for x in loader:
        dist.all_reduce(x)
"""


def test_a_rank_compared_only_with_the_not_distributed_sentinel_does_not_make_a_value_rank_dependent():
    """Round 19's YOLOv5 twin: ``rank == -1`` is false on every rank (or true on every rank, at the helper's
    default), so a loader built with ``sampler=None if rank == -1 else DistributedSampler(...)`` has the same
    length everywhere; a test of a real rank value (``rank == 0``) still makes it rank-dependent."""
    assert lint_source(SENTINEL, "train.py") == []
    [finding] = lint_source(SENTINEL.replace("rank == -1", "rank == 0"), "train.py")
    assert finding.kind == "rank-dependent-loop"
    assert lint_source(SENTINEL.replace("rank == -1", "rank - 1 == -1"), "train.py") != []


IMPLICIT = """
from collections import defaultdict

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, IterableDataset


class Meter:
    def __init__(self):
        self.total = 0.0

    @property
    def global_total(self):
        t = torch.tensor([self.total])
        dist.all_reduce(t)
        return t.item()

    def __str__(self):
        return f"{self.global_total:.3f}"


class Logger:
    def __init__(self):
        self.meters = defaultdict(Meter)

    def __str__(self):
        return "  ".join(f"{name}: {meter}" for name, meter in self.meters.items())


class Shards(IterableDataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        n = torch.tensor([len(self.rows)])
        dist.all_reduce(n, op=dist.ReduceOp.MIN)
        return int(n)

    def __iter__(self):
        return iter(self.rows[: len(self)])


def worker(rows):
    logger = Logger()
    loader = DataLoader(Shards(rows), batch_size=4)
    if dist.get_rank() == 0:
        print(f"{len(loader)} steps")
    if dist.get_rank() == 0:
        print(f"stats: {logger}")
"""


def test_methods_a_builtin_or_an_f_string_runs_are_calls_that_can_reach_a_collective():
    """Round 20's torchvision MetricLogger (``f"{self}"`` runs ``__str__``, which reads a property that
    all-reduces, through ``f"{meter}"`` of a ``defaultdict(SmoothedValue)``'s values) and its IterableDataset
    whose ``__len__`` all-reduces (``len(loader)`` is ``len(dataset)`` for a DataLoader): under a rank test,
    each is a collective on some ranks only, named by the line that runs it and the method it runs."""
    findings = lint_source(IMPLICIT, "train.py")
    assert [(f.line, f.kind) for f in findings] == [(48, "hidden-collective"), (50, "hidden-collective")]
    assert "`len(loader)` reaches Shards.__len__ -> dist.all_reduce" in findings[0].why
    assert "Logger.__str__ ->" in findings[1].why and "Meter.__str__ -> self.global_total" in findings[1].why
    # on every rank: nothing to say
    assert lint_source(IMPLICIT.replace("if dist.get_rank() == 0:", "if True:"), "train.py") == []
    # classes whose methods make no collective, a builtin shadowed by the file's own len, a DataLoader with its
    # own sampler (its length is the sampler's): not calls that reach one
    quiet = IMPLICIT.replace("dist.all_reduce(", "print(")
    assert lint_source(quiet, "train.py") == []
    own_len = IMPLICIT.replace("def worker(rows):", "def len(x):\n    return 0\n\n\ndef worker(rows):")
    assert all("len(loader)" not in f.why for f in lint_source(own_len, "train.py"))
    sampled = IMPLICIT.replace("batch_size=4)", "batch_size=4, sampler=range(8))")
    assert [f.line for f in lint_source(sampled, "train.py")] == [50]


RESUME = """
import os
import torch
import torch.distributed as dist


def is_main_process():
    return dist.get_rank() == 0


class Checkpointer:
    def __init__(self, folder):
        self.folder = folder

    def resume(self):
        box = [None]
        if is_main_process() and os.path.exists(self.folder):
            box[0] = torch.load(self.folder)
        dist.broadcast_object_list(box, src=0)
        if box[0] is None:
            return 0
        return box[0]["iteration"] + 1


def train(folder, steps):
    checkpointer = Checkpointer(os.path.join(folder, f"node{dist.get_rank() // 2}"))
    start = checkpointer.resume()
    for step in range(start, steps):
        dist.barrier()
"""


def test_a_resume_point_broadcast_by_a_method_and_a_constant_returned_on_its_agreed_value_is_the_same_everywhere():
    """Round 22's detectron2-style resume: ``resume_or_load`` of a ``Checkpointer`` broadcasts the checkpoint from
    rank 0 and returns 0 when it holds none, its iteration + 1 otherwise; both are the same on every rank, so the
    loop from there is not rank-dependent."""
    assert lint_source(RESUME, "train.py") == []  # the checkpoint folder is each node's own: rank-dependent
    differs = RESUME.replace("if box[0] is None:", "if dist.get_rank() == 1:")
    assert [f.kind for f in lint_source(differs, "train.py")] == ["rank-dependent-loop"]


ZERO_FIRST = """
import os
from contextlib import contextmanager
import torch
import torch.distributed as dist


@contextmanager
def local_main_first(local_rank):
    if local_rank != 0:
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()


def download(root):
    torch.save(torch.zeros(3), root)


def check_dataset(root, local_rank):
    if not os.path.exists(root):
        if local_rank == 0:
            download(root)
        else:
            raise FileNotFoundError(f"dataset not found: {root} (made by local rank 0 first)")
    return torch.load(root)


def worker(root, local_rank):
    with local_main_first(local_rank):
        data = check_dataset(root, local_rank)
    dist.all_reduce(data)
"""


def test_a_file_not_found_raised_where_a_file_check_found_it_missing_is_a_precondition_not_an_early_exit():
    """Round 22's YOLOv5 ``check_dataset`` inside ``torch_distributed_zero_first``: local rank 0 makes the data, the
    others raise ``FileNotFoundError`` if it is still missing -- an assert written out, not a way out of the
    function that lint can judge (whether the file is there is what the run shows). Another exception there is
    still a rank leaving early."""
    assert lint_source(ZERO_FIRST, "train.py") == []
    other = ZERO_FIRST.replace("raise FileNotFoundError(", "raise SystemExit(")
    assert [f.kind for f in lint_source(other, "train.py")] == ["early-exit"]


def test_the_report_counts_rank_dependent_collectives_only_when_every_finding_is_one():
    """review41b: a dropped async handle, which every rank reaches, was counted as a 'rank-dependent collective'."""
    source = "import torch\nimport torch.distributed as dist\n\ndef step(t):\n    dist.all_reduce(t, async_op=True)\n"
    findings = lint_source(source, "train.py")
    assert [f.kind for f in findings] == ["unwaited-async"]
    assert report(findings).splitlines()[0] == "1 problem found:"


NO_SYNC_FORWARD_OUTSIDE = """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def step(model, x):
    ddp = DDP(model)
    loss = ddp(x).sum()
    if dist.get_rank() == 0:
        with ddp.no_sync():
            loss.backward()
"""


def test_a_backward_inside_no_sync_of_a_forward_made_outside_it_still_all_reduces():
    """review41b: the forward decides (``no_sync``'s docstring: "The forward pass should be included inside the
    context manager, or else gradients will still be synchronized"); a loss made inside the block does not."""
    [finding] = lint_source(NO_SYNC_FORWARD_OUTSIDE, "train.py")
    assert "DDP backward" in finding.collective and finding.line == 11
    inside = NO_SYNC_FORWARD_OUTSIDE.replace(
        "    loss = ddp(x).sum()\n    if dist.get_rank() == 0:\n        with ddp.no_sync():\n",
        "    if dist.get_rank() == 0:\n        with ddp.no_sync():\n            loss = model(x).sum()\n",
    )
    assert lint_source(inside, "train.py") == []


STORE_SET_UNDER_A_TEST = """
import torch.distributed as dist


def store_key(store):
    r = dist.get_rank()
    if r != 0:
        store.set(f"done-{r}", "1")
    if r == 0:
        store.wait([f"done-{i}" for i in range(dist.get_world_size())])
"""


def test_a_store_set_in_an_if_body_is_skipped_where_its_test_is_false():
    """review46b C2: the set under ``if r != 0:`` is made where the test is true and skipped where it is false (the
    text said the opposite); one in the ``else`` is skipped where the test is true."""
    [finding] = lint_source(STORE_SET_UNDER_A_TEST, "train.py")
    assert finding.kind == "store-key" and "skipped on the ranks where `r != 0` is false" in finding.why, finding.why
    in_else = STORE_SET_UNDER_A_TEST.replace(
        '    if r != 0:\n        store.set(f"done-{r}", "1")\n',
        '    if r == 0:\n        pass\n    else:\n        store.set(f"done-{r}", "1")\n',
    )
    [finding] = lint_source(in_else, "train.py")
    assert "skipped on the ranks where `r == 0` is true" in finding.why, finding.why


def _many_calls(n: int) -> str:
    """A script of ``n`` blocks of different collectives at its top level (attack21 a02's shape, widened)."""
    block = (
        "dist.all_reduce(t)\nprint(t)\ndist.broadcast_object_list(objs, src=0)\ndist.all_gather(out, t)\n"
        "x = t + 1\ndist.gather(t, out if dist.get_rank() == 0 else None, dst=0)\n"
    )
    head = (
        "import torch\nimport torch.distributed as dist\nt = torch.ones(1)\nobjs = [None]\nout = [torch.zeros(1)] * 2\n"
    )
    return head + block * n


def test_lint_time_grows_about_linearly_with_the_collectives_of_one_scope():
    """attack21 a02: lint looked up a scope's assignments once per collective, scanning the whole scope each
    time: 4x the calls cost 14x the CPU. CPU time of this process (not wall time), and a bound well under 16x."""
    import time as clock

    def cpu(n: int) -> float:
        source = _many_calls(n)
        start = clock.process_time()
        lint_source(source, "many.py")
        return clock.process_time() - start

    cpu(20)  # warm caches and imports
    small, large = cpu(150), cpu(600)
    assert large < 8 * max(small, 0.05), (small, large)


def test_valid_code_nested_deeper_than_the_recursion_limit_is_linted():
    """attack21 a05: a 600-case ``elif`` dispatch (valid Python) made lint refuse the whole file as "nested too
    deeply", and the rank-0-only barrier in another function went unreported. Lint now tries once more in a thread
    with a deep stack."""
    cases = "".join(f"    elif op == {i}:\n        return {i}\n" for i in range(1, 600))
    source = (
        "import torch.distributed as dist\n\n\ndef dispatch(op):\n    if op == 0:\n        return 0\n"
        + cases
        + "\n\ndef save():\n    if dist.get_rank() == 0:\n        dist.barrier()\n"
    )
    compile(source, "deep.py", "exec")
    findings = lint_source(source, "deep.py")
    assert [f.line for f in findings] == [source.count("\n") - 0], findings
    assert sys.getrecursionlimit() < 10_000  # put back


SEEDED_DATA_PER_RANK = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def make_data(rank, n, seed):
    g = torch.Generator().manual_seed(seed + rank)
    x = torch.randn(n, 6, generator=g)
    return list(zip(x.split(8), (x[:, 0] > 0).long().split(8)))


def train(model):
    rank = dist.get_rank()
    model = DDP(model)
    for epoch in range(2):
        for x, y in make_data(rank, 32, epoch):
            model(x).sum().backward()
"""


def test_a_helper_whose_rank_only_seeds_the_data_returns_as_many_batches_on_every_rank():
    """Round 26 (correct_logger_version_ckpt_dir_broadcast, correct_hparams_sanitize_copy_of_namespace: a
    Lightning-style fit over ``make_data(rank, 32, epoch)``): the rank seeds the generator, the count is
    ``32 / 8`` everywhere, so the DDP loop runs as often on every rank. Sized by the rank, it is flagged."""
    assert lint_source(SEEDED_DATA_PER_RANK, "fit.py") == []
    sized = SEEDED_DATA_PER_RANK.replace("torch.randn(n, 6, generator=g)", "torch.randn(n + rank, 6, generator=g)")
    assert {f.kind for f in lint_source(sized, "fit.py")} == {"rank-dependent-loop"}


RESUME_FROM_COMMITTED_STEP = """
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def load_latest(folder, rank):
    for step in sorted(os.listdir(folder)):
        extra = torch.load(os.path.join(folder, step, f"extra-rank{rank}.pt"))
        return int(step), torch.load(os.path.join(folder, step, "model.pt")), extra
    return 0, None, {}


def resume(folder, model):
    rank = dist.get_rank()
    start, state, extra = load_latest(folder, rank)
    model = DDP(model)
    for step in range(start, 10):
        model(torch.ones(1)).sum().backward()
"""


def test_a_tuple_element_the_rank_argument_does_not_reach_is_the_same_on_every_rank():
    """Round 26 (correct_resume_committed_step_metadata, modelled on a DCP-style resume): ``rank`` names this
    rank's extra-state file, the step comes from the folder: the loop from ``start`` is not rank-dependent. With a
    per-rank fallback (``except ...: continue``, the buggy twin) the step a rank returns depends on its own
    file, and the loop is flagged."""
    assert lint_source(RESUME_FROM_COMMITTED_STEP, "resume.py") == []
    fallback = RESUME_FROM_COMMITTED_STEP.replace(
        '        extra = torch.load(os.path.join(folder, step, f"extra-rank{rank}.pt"))\n',
        '        try:\n            extra = torch.load(os.path.join(folder, step, f"extra-rank{rank}.pt"))\n'
        "        except OSError:\n            continue\n",
    )
    assert {f.kind for f in lint_source(fallback, "resume.py")} == {"rank-dependent-loop"}


def test_a_handler_that_goes_on_names_the_try_and_the_handler_of_the_skipped_collective() -> None:
    [gathered, barrier, reduced] = lint_file(CORPUS / "bad_except_swallows_try_collectives.py")
    assert barrier.condition == "except Exception" and barrier.condition_line == 31
    assert "sits in the `try` at line 27, whose `except Exception` handler at line 31 goes on" in barrier.why
    assert gathered.why.startswith("`gather()` reaches dist.all_gather_object; this all_gather_object sits in")
    assert reduced.condition == "except torch.cuda.OutOfMemoryError" and reduced.condition_line == 43
    assert "all_reduce the flag (ReduceOp.MAX)" in reduced.fix
    source = (CORPUS / "bad_except_swallows_try_collectives.py").read_text()
    reraised = lint_source(source.replace('print("task failed:", exc)', "raise"))
    assert [(f.line, f.kind) for f in reraised] == [(reduced.line, "except-path")]


NO_SYNC_ON_ONE_RANK = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def train(x):
    ddp = DDP(torch.nn.Linear(4, 2))
    for step in range(3):
        if dist.get_rank() == 0:
            with ddp.no_sync():
                ddp(x).sum().backward()
        else:
            ddp(x).sum().backward()
"""


def test_a_backward_whose_twin_runs_inside_no_sync_on_the_other_ranks_says_so() -> None:
    """attack24 a08: lint said the others never call the backward and to move it out from under the test; they
    call it at line 10, inside no_sync(), where DDP makes no gradient all_reduce."""
    [finding] = lint_source(NO_SYNC_ON_ONE_RANK)
    assert (finding.line, finding.kind) == (12, "branch")
    assert "the others make the same call at line 10, inside `ddp.no_sync()`" in finding.why
    assert "never call it" not in finding.why
    assert finding.fix.startswith("the same call at line 10 runs inside `ddp.no_sync()`: enter `no_sync()` on every")


SEED_BROADCAST_THEN_OFFSET = """\
import torch
import torch.distributed as dist

def set_determinism(seed, rank_in_pp):
    if seed is None:
        seed_tensor = torch.get_rng_state()[:8]
        dist.broadcast(seed_tensor, src=0)
        seed = seed_tensor.view(torch.int64).item()
    seed += rank_in_pp
    torch.manual_seed(seed)
"""


def test_a_test_is_judged_by_what_was_assigned_before_it() -> None:
    """attack23 a06 c (modelled on torchtitan's ``set_determinism``): the rank offset added to ``seed`` after the
    ``if seed is None: broadcast(...)`` cannot change that test, so it is no branch on the rank. The same offset
    before the test, or inside a loop around it, makes it one."""
    assert lint_source(SEED_BROADCAST_THEN_OFFSET) == []
    before = SEED_BROADCAST_THEN_OFFSET.replace(
        "    if seed is None:", "    seed = None if rank_in_pp else seed\n    if seed is None:"
    )
    assert [(f.line, f.kind) for f in lint_source(before)] == [(8, "branch")]
    looped = SEED_BROADCAST_THEN_OFFSET.replace("    if seed is None:", "    for _ in range(2):\n     if seed is None:")
    looped = looped.replace("\n    seed += rank_in_pp", "\n     seed += rank_in_pp")
    assert [f.kind for f in lint_source(looped)] == ["branch"], lint_source(looped)


def test_an_elif_chain_is_walked_once_per_branch(monkeypatch) -> None:
    """attack28 a10: lint's time grew as the square of a generated if/elif dispatcher (1,000 branches: 15-18 s),
    each branch walking every branch after it. The work per branch is now bounded: counted, not timed."""
    walked_nodes = 0
    keyed = barrierlab.lint._keyed_names

    def counting(stmts, *rest):
        nonlocal walked_nodes
        walked_nodes += sum(1 for _ in barrierlab.lint._own_nodes(stmts))
        return keyed(stmts, *rest)

    monkeypatch.setattr(barrierlab.lint, "_keyed_names", counting)
    branches = "\n".join(f"    {'if' if i == 0 else 'elif'} op == {i}:\n        table[{i}] = x" for i in range(400))
    source = f"import torch.distributed as dist\n\ndef dispatch(op, x, table):\n{branches}\n    dist.barrier()\n"
    assert lint_source(source) == []
    assert walked_nodes <= 40 * 400, walked_nodes  # each branch's few nodes, not every branch after it
    walked = list(barrierlab.lint._walk_items([_nested_items(3000)]))  # no recursion: 3,000 levels deep
    assert len(walked) == 3001


def _nested_items(depth: int):
    item = barrierlab.lint._Item("if")
    for _ in range(depth):
        item = barrierlab.lint._Item("if", orelse=[item])
    return item


def test_a_raise_its_handler_catches_and_goes_on_from_is_no_early_exit() -> None:
    """review62b C1: rank 1's `raise ValueError` under `except ValueError: pass` reaches the barrier after the try;
    what it skips is the try's all_reduce (except-path), not the barrier."""
    source = """
import torch, torch.distributed as dist

def f():
    try:
        if dist.get_rank() == 1:
            raise ValueError("x")
        dist.all_reduce(torch.ones(2))
    except ValueError:
        pass
    dist.barrier()
"""
    assert [(f.line, f.kind) for f in lint_source(source)] == [(8, "except-path")]
    reraised = source.replace("        pass", "        raise")
    assert "early-exit" in {f.kind for f in lint_source(reraised)}
    other = source.replace("except ValueError:", "except KeyError:")  # not caught: rank 1 leaves
    assert (11, "early-exit") in [(f.line, f.kind) for f in lint_source(other)]


def test_a_set_ordered_object_broadcast_says_the_receivers_take_the_sources_objects() -> None:
    """review62b M1: with a fixed src, broadcast_object_list neither aborts nor hangs when the ranks' orders differ:
    every rank gets the source's objects, and a rank's own loop element beside them is the mismatch."""
    source = """
import torch.distributed as dist

def share(names):
    out = {}
    for name in set(names):
        box = [name]
        dist.broadcast_object_list(box, src=0)
        out[name] = box[0]
    return out
"""
    [finding] = lint_source(source)
    assert finding.kind == "set-order", finding
    assert "receives the source rank's objects in the source's order" in finding.why, finding.why
    assert "abort" not in finding.why, finding.why


ASYNC_BARRIER_RACE = """\
import os
import time
import torch.distributed as dist


def fn(folder):
    rank = dist.get_rank()
    path = os.path.join(folder, "data.txt")
    if rank == 0:
        time.sleep(0.3)
        with open(path, "w") as f:
            f.write("hello")
{barrier}
    if rank != 0:
        with open(path) as f:
            data = f.read()
{after}
    return rank
"""


def test_an_async_barrier_waited_only_after_the_read_does_not_order_the_write_before_it() -> None:
    """review64b M2: `work = dist.barrier(async_op=True)` between rank 0's write and the others' read, with
    `work.wait()` only after the read: the barrier orders nothing until its wait returns."""
    source = ASYNC_BARRIER_RACE.format(barrier="    work = dist.barrier(async_op=True)", after="    work.wait()")
    [race] = lint_source(source, "p08.py")
    assert (race.line, race.kind, race.condition) == (15, "file-race", "rank == 0")
    assert "write `path` at line 11" in race.why
    assert "`work = dist.barrier(async_op=True)` at line 13, is called with async_op=True" in race.why
    assert "orders nothing until `work.wait()` returns, and none comes before this read" in race.why
    assert "On gloo the other ranks pass line 13 without waiting for the writer" in race.why
    assert race.fix.startswith("call `work.wait()` after line 13 and before this read")
    dropped = ASYNC_BARRIER_RACE.format(barrier="    dist.barrier(async_op=True)", after="")
    assert [(f.line, f.kind) for f in lint_source(dropped)] == [(13, "unwaited-async"), (15, "file-race")]
    assert "its Work handle is dropped on that line" in lint_source(dropped)[1].why


def test_an_async_barrier_waited_before_the_read_orders_the_write() -> None:
    for barrier in (
        "    dist.barrier(async_op=True).wait()",
        "    work = dist.barrier(async_op=True)\n    work.wait()",
        "    works = [dist.barrier(async_op=True)]\n    for w in works:\n        w.wait()",
        "    dist.barrier()",
    ):
        assert lint_source(ASYNC_BARRIER_RACE.format(barrier=barrier, after="")) == [], barrier


REMOVAL_RACE = """\
import os
import shutil
from pathlib import Path
import torch.distributed as dist


def fn(folder):
    rank = dist.get_rank()
    path = os.path.join(folder, "ck.txt")
    if rank == 0:
        with open(path, "w") as f:
            f.write("x")
    dist.barrier()
    with open(path) as f:
        data = f.read()
{between}    if rank == 0:
        {remove}
    return data
"""


def test_a_removal_on_one_rank_after_every_rank_read_with_nothing_between_is_a_race() -> None:
    """review64b M5: rank 0 writes, every rank passes a barrier and reads, then rank 0 removes the file with
    nothing ordering the other ranks' reads before the removal."""
    [race] = lint_source(REMOVAL_RACE.format(between="", remove="os.remove(path)"), "p19.py")
    assert (race.line, race.kind, race.condition, race.collective) == (17, "file-race", "rank == 0", "os.remove")
    assert "remove `path` here (os.remove), and other ranks read it at line 14 (`open`)" in race.why
    assert "`dist.barrier()` at line 13, comes before the read" in race.why
    assert "FileNotFoundError" in race.why and "on gloo" in race.why
    assert race.fix.startswith("put dist.barrier() after the read at line 14 and before this removal")
    for remove in ("os.unlink(path)", "Path(path).unlink()"):
        [race] = lint_source(REMOVAL_RACE.format(between="", remove=remove))
        assert (race.line, race.kind) == (17, "file-race"), remove
    joined = REMOVAL_RACE.replace(
        "with open(path) as f:\n        data", "with open(os.path.join(folder, 'ck.txt')) as f:\n        data"
    )
    [race] = lint_source(joined.format(between="", remove="shutil.rmtree(folder)"))
    assert (race.line, race.kind) == (17, "file-race")
    assert (
        "remove `folder` here (shutil.rmtree), and other ranks read `os.path.join(folder, 'ck.txt')`, a path inside it, at line 14"
        in race.why
    )


def test_a_removal_after_a_barrier_that_follows_the_reads_is_quiet() -> None:
    assert lint_source(REMOVAL_RACE.format(between="    dist.barrier()\n", remove="os.remove(path)")) == []
    only_rank0_reads = REMOVAL_RACE.replace(
        "    with open(path) as f:\n        data", "    if rank == 0:\n        data"
    )
    assert lint_source(only_rank0_reads.format(between="", remove="os.remove(path)")) == []


REDUCE_OP = """\
import torch
import torch.distributed as dist


def fn(use_max):
    rank = dist.get_rank()
    t = torch.tensor([float(rank)])
{op_line}    dist.all_reduce(t, op={op})
    return t.item()
"""


def test_a_reduce_op_that_depends_on_the_rank_is_different_reduce_ops() -> None:
    """review64b M4 (p16, p22): the ranks of one all_reduce pass different ops; gloo pairs them and every rank
    finishes with one result that is not what every rank asked for."""
    ternary = "dist.ReduceOp.MAX if rank == 0 else dist.ReduceOp.SUM"
    [finding] = lint_source(REDUCE_OP.format(op_line="", op=ternary), "p16.py")
    assert (finding.line, finding.kind, finding.collective) == (8, "different-reduce-ops", "dist.all_reduce")
    assert finding.condition == f"op={ternary}"
    assert "gloo does not check that they agree, so every rank finishes with no error" in finding.why
    assert "one rank's op" in finding.why and "a mix, element by element" in finding.why
    assert finding.fix.startswith("pass the same op on every rank")
    assigned = REDUCE_OP.format(op_line=f"    op = {ternary}\n", op="op")
    [finding] = lint_source(assigned)
    assert (finding.line, finding.kind, finding.condition) == (9, "different-reduce-ops", "op=op")
    reduce = assigned.replace("dist.all_reduce(t, op=op)", "dist.reduce(t, 0, op)")
    assert [(f.line, f.kind) for f in lint_source(reduce)] == [(9, "different-reduce-ops")]


CHOSEN_ROOT = """\
import torch
import torch.distributed as dist


def fn(world):
    rank = dist.get_rank()
    t = torch.full((2,), float(rank))
{root_line}    dist.broadcast(t, src={root})
    return t.tolist()
"""


def test_a_root_the_rank_picks_is_different_roots() -> None:
    """review70b M3: `src=0 if rank < 2 else 1` got "No rank-dependent collectives found."; run on 4 ranks,
    ranks 1 and 3 returned rank 0's tensor and ranks 0 and 2 raised "Connection closed by peer"."""
    [finding] = lint_source(CHOSEN_ROOT.format(root_line="", root="0 if rank < 2 else 1"), "bsrc.py")
    assert (finding.line, finding.kind, finding.collective) == (8, "different-roots", "dist.broadcast")
    assert finding.condition == "src=0 if rank < 2 else 1"
    assert "chosen by a test on this rank's own rank (`rank < 2`)" in finding.why
    assert "different roots (0, 1)" in finding.why
    assert finding.fix.startswith("pass the same src on every rank")
    assigned = CHOSEN_ROOT.format(root_line="    root = 0 if rank < 2 else 1\n", root="root")
    assert [(f.line, f.kind, f.condition) for f in lint_source(assigned)] == [(9, "different-roots", "src=root")]
    branches = "    if rank < 2:\n        root = 0\n    else:\n        root = 1\n"
    [finding] = lint_source(CHOSEN_ROOT.format(root_line=branches, root="root"))
    assert (finding.line, finding.kind) == (12, "different-roots")
    reduce = assigned.replace("dist.broadcast(t, src=root)", "dist.reduce(t, dst=root)")
    assert [(f.line, f.kind, f.condition) for f in lint_source(reduce)] == [(9, "different-roots", "dst=root")]


def test_a_root_every_rank_picks_alike_is_quiet() -> None:
    for root_line, root in (
        ("", "0 if rank < 2 else 0"),
        ("", "0 if world < 4 else 1"),
        ("    root = 1 if world > 2 else 0\n", "root"),
        ("    root = 0\n    if world > 2:\n        root = 1\n", "root"),
        ("", "0 if rank < 2 else 2, group=groups[rank // 2]"),
        ("    if rank < 2:\n        root = 0\n    else:\n        root = 0\n", "root"),
    ):
        assert lint_source(CHOSEN_ROOT.format(root_line=root_line, root=root)) == [], root_line + root
    each_round = CHOSEN_ROOT.format(root_line="    if rank == 1:\n    ", root="1 if rank == 1 else 0")
    assert "different-roots" not in {f.kind for f in lint_source(each_round)}


GROUP_ORDER = """\
import torch.distributed as dist


def groups_in_rank_order():
    rank = dist.get_rank()
    if rank == 0:
        a = dist.new_group([0, 1]{extra})
        b = dist.new_group([2, 3]{extra})
    else:
{other}
    dist.barrier()
    return rank
"""


def test_groups_made_in_a_rank_dependent_order_are_flagged() -> None:
    """review70b M4: both sides of `if rank == 0` make the same two groups, in other orders; lint saw one
    new_group on each side and said "No rank-dependent collectives found." Run on 4 ranks the ranks waited in
    new_group until the deadline or raised gloo's 2000 ms timeout."""
    swapped = "        b = dist.new_group([2, 3]{extra})\n        a = dist.new_group([0, 1]{extra})"
    source = GROUP_ORDER.format(other=swapped, extra="").format(extra="")
    [finding] = lint_source(source, "ngorder.py")
    assert (finding.line, finding.kind, finding.collective, finding.condition) == (
        7,
        "branch",
        "dist.new_group",
        "rank == 0",
    )
    assert "the others make `dist.new_group([2, 3])` (line 10): the same groups in another order" in finding.why
    assert "in the same order (its docstring)" in finding.why and "On gloo" in finding.why
    assert finding.fix.startswith("make every group on every rank, in one order, before the test")
    own_only = "        a = dist.new_group([2, 3])\n        b = dist.new_group([0, 1, 2, 3])"
    [finding] = lint_source(GROUP_ORDER.format(other=own_only, extra=""))
    assert (finding.line, finding.kind) == (7, "branch") and ": other groups." in finding.why


def test_groups_made_in_one_order_on_every_rank_are_quiet() -> None:
    same = "        a = dist.new_group([0, 1])\n        b = dist.new_group([2, 3])"
    assert lint_source(GROUP_ORDER.format(other=same, extra="")) == []
    local = "        b = dist.new_group([2, 3]{extra})\n        a = dist.new_group([0, 1]{extra})"
    extra = ", use_local_synchronization=True"
    assert lint_source(GROUP_ORDER.format(other=local, extra=extra).format(extra=extra)) == []
    not_rank = GROUP_ORDER.replace("if rank == 0:", "if use_tp:").replace("():", "(use_tp):", 1)
    swapped = "        b = dist.new_group([2, 3])\n        a = dist.new_group([0, 1])"
    assert lint_source(not_rank.format(other=swapped, extra="")) == []


def test_a_reduce_op_every_rank_shares_is_quiet() -> None:
    for op_line, op in (
        ("", "dist.ReduceOp.MAX"),
        ("    op = dist.ReduceOp.MAX if use_max else dist.ReduceOp.SUM\n", "op"),
        ("", "dist.ReduceOp.SUM if dist.get_world_size() > 1 else dist.ReduceOp.MAX"),
    ):
        assert lint_source(REDUCE_OP.format(op_line=op_line, op=op)) == [], op
    per_group = REDUCE_OP.format(
        op_line="    op = dist.ReduceOp.MAX if rank < 2 else dist.ReduceOp.SUM\n", op="op, group=groups[rank // 2]"
    )
    assert lint_source(per_group) == []


RANK_SIZE = """\
import torch
import torch.distributed as dist


def fn():
    rank = dist.get_rank()
{make}
    dist.{call}
    return t
"""


def test_a_tensor_sized_by_the_rank_handed_to_a_same_shape_collective_is_a_size_mismatch() -> None:
    """review64b M3 (p13): `torch.ones(4 if rank == 0 else 8)` handed to an all_reduce."""
    [finding] = lint_source(RANK_SIZE.format(make="    t = torch.ones(4 if rank == 0 else 8)", call="all_reduce(t)"))
    assert (finding.line, finding.kind, finding.condition) == (8, "size-mismatch", "size of t")
    assert "the size of `t` (`torch.ones(4 if rank == 0 else 8)`, line 7) comes from the rank" in finding.why
    assert "all_reduce needs one shape on every rank: on gloo it can hang until the timeout, abort" in finding.why
    assert "give the tensor a size every rank shares" in finding.fix and "ReduceOp.MAX" in finding.fix
    for make, call in (
        ("    t = torch.ones(rank + 1)", "all_reduce(t)"),
        ("    n = 2 * rank + 1\n    t = torch.zeros(n).float()", "broadcast(t, 0)"),
        ("    t = torch.zeros((2, rank + 1))", "all_gather([torch.zeros(2, 3) for _ in range(4)], t)"),
        ("    t = torch.zeros([3, rank])", "all_reduce(t)"),
        ("    t = torch.arange(rank + 1)", "all_reduce(t)"),
    ):
        [finding] = lint_source(RANK_SIZE.format(make=make, call=call))
        assert (finding.kind, finding.condition) == ("size-mismatch", "size of t"), make
    [finding] = lint_source(RANK_SIZE.format(make="    n = 2 * rank + 1\n    t = torch.zeros(n)", call="all_reduce(t)"))
    assert "(`torch.zeros(n)`, line 8; `n = 2 * rank + 1`, line 7)" in finding.why


def test_a_tensor_whose_size_every_rank_shares_is_quiet() -> None:
    padded = (
        "    local = torch.arange(rank + 1).float()\n"
        "    n = torch.tensor([local.numel()])\n"
        "    dist.all_reduce(n, op=dist.ReduceOp.MAX)\n"
        "    t = torch.zeros(int(n.item()))\n"
        "    t[: local.numel()] = local\n"
        "    out = [torch.zeros_like(t) for _ in range(dist.get_world_size())]"
    )
    for make, call in (
        ("    t = torch.tensor([float(rank)])", "all_reduce(t)"),  # its values differ, not its size
        ("    v = torch.tensor([float(rank)])\n    t = torch.zeros(v.shape)", "all_reduce(t)"),
        ("    t = torch.arange(rank * 4, rank * 4 + 4)", "all_reduce(t)"),
        ("    t = torch.ones(4 if rank == 0 else 8)", "all_gather_object([None] * 4, t)"),  # no same-shape rule
        ("    t = torch.ones(4 if rank == 0 else 8)", "all_to_all_single(torch.empty(8), t, [2] * 4, [2] * 4)"),
        (padded, "all_gather(out, t)"),  # padded to the longest, agreed by an all_reduce MAX
    ):
        assert lint_source(RANK_SIZE.format(make=make, call=call)) == [], make


def test_a_raise_on_an_outcome_rank_0_broadcast_is_taken_by_every_rank_together() -> None:
    """Modelled on round 38's correct cosmos and Marigold items (NVIDIA cosmos-framework PR #65, marigold-v2 PR #7):
    rank 0 does the work and broadcasts its outcome; every rank raises on it together, so the collectives after
    the raise are skipped by every rank or none."""
    source = """
import torch.distributed as dist

def prepare(path):
    outcome = [None]
    if dist.get_rank() == 0:
        try:
            open(path, "w").close()
        except OSError as exc:
            outcome[0] = str(exc)
    dist.broadcast_object_list(outcome, src=0)
    if outcome[0] is not None:
        raise RuntimeError(outcome[0])
    return path

def main(path):
    prepare(path)
    dist.barrier()
"""
    assert lint_source(source) == []
    unshared = source.replace("    dist.broadcast_object_list(outcome, src=0)\n", "")
    assert [f.kind for f in lint_source(unshared)] == ["early-exit"], lint_source(unshared)


def test_a_step_function_handed_the_ddp_model_and_the_bare_one_is_no_ddp_forward_for_the_bare_one() -> None:
    """Modelled on round 37's correct RETURNN item (rwth-i6/returnn PR #1461, ``Engine._run_step``): the same
    step function gets the DDP model in training and the bare module in rank 0's evaluation; the evaluation's
    forward issues nothing."""
    source = """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class Engine:
    def __init__(self, model):
        self.bare = model
        self.ddp = DDP(model)

    def step(self, model, batch):
        return model(batch).sum()

    def train(self, batches):
        for batch in batches:
            self.step(self.ddp, batch).backward()

    def evaluate(self, batches):
        if dist.get_rank() != 0:
            return
        for batch in batches:
            self.step(self.bare, batch)
"""
    assert lint_source(source) == []
    ddp_only = source.replace("self.step(self.bare, batch)", "self.step(self.ddp, batch)")
    assert [f.kind for f in lint_source(ddp_only)] == ["hidden-collective"], lint_source(ddp_only)


def test_a_broadcast_orders_only_its_roots_writes_before_the_others_reads() -> None:
    """review65b M5 (notebook 06 §6): rank 3 writes, broadcast(src=0), rank 0 reads: rank 0 waits for nobody."""
    source = """
import torch
import torch.distributed as dist

def prog(path):
    rank = dist.get_rank()
    if rank == 3:
        with open(path, "w") as f:
            f.write("3")
    dist.broadcast(torch.zeros(1), src=0)
    if rank == 0:
        with open(path) as f:
            return f.read()
"""
    [finding] = lint_source(source)
    assert (finding.kind, finding.line) == ("file-race", 12), finding
    assert "holds the other ranks until rank 0 has sent, not the readers until the writer has written" in finding.why
    # the root's own write, read by the others after its broadcast: ordered
    roots = source.replace("if rank == 3:", "if rank == 0:").replace(
        "    if rank == 0:\n        with open(path) as f", "    if rank == 1:\n        with open(path) as f"
    )
    assert lint_source(roots) == [], lint_source(roots)
    assert lint_source(source.replace("dist.broadcast(torch.zeros(1), src=0)", "dist.barrier()")) == []


PEER_FILES = """\
import os
import time

import torch
import torch.distributed as dist


def f15_broadcast_handoff(folder):
    rank = dist.get_rank()
    if rank == 3:
        time.sleep(0.3)
    with open(os.path.join(folder, f"s{rank}"), "w") as f:
        f.write("x")
    dist.broadcast(torch.ones(1), src=0)
    if rank == 0:
        return sorted(os.listdir(folder))
    return rank
"""


def test_every_ranks_own_file_listed_by_one_rank_after_a_broadcast_is_a_file_race(tmp_path: Path) -> None:
    """review69b M2 (notebook 06 §6, notebook 05's exercise): every rank writes its own file, broadcast(src=0),
    rank 0 lists the folder. Run on 4 ranks, rank 0 listed ['s0', 's1', 's2']: the broadcast does not hold rank 0
    until rank 3 has written."""
    program = tmp_path / "gaps.py"
    program.write_text(PEER_FILES)
    [race] = lint_file(program)
    assert (race.line, race.kind, race.condition, race.collective) == (16, "file-race", "rank == 0", "os.listdir")
    assert "every rank writes a file of its own into `folder` at line 12" in race.why
    assert "list `folder` here (`os.listdir`)" in race.why
    assert "`dist.broadcast(torch.ones(1), src=0)` (line 14)" in race.why
    assert "holds the ranks other than 0 until rank 0 has sent" in race.why
    # review70b M5: on gloo the broadcast's tree ordered rank 1's write before rank 3's read; torch promises only
    # the root's write, and the text must not say that no other rank's write is ordered
    assert "what torch guarantees is only that rank 0's write comes before their reads" in race.why
    assert "gloo's broadcast tree can order more, with src=0 on 4 ranks rank 1's write before rank 3's read" in race.why
    assert "and no other rank's" not in race.why
    assert "of a broadcast torch guarantees only that its root's write comes first" in race.fix
    [other_root] = lint_source(PEER_FILES.replace("src=0", "src=2"))
    assert "what torch guarantees is only that rank 2's write comes before their reads" in other_root.why
    assert "tree can order more, but that is the backend's algorithm, not a promise" in other_root.why
    # review81l M4: on gloo the root was held by some ranks' writes (rank 1's), so not "nothing holds" it
    assert "nothing torch promises holds the reading rank until every other rank has written" in race.why
    assert "on gloo it can list the folder before a slower rank has created its file there, and the list then" in (
        race.why
    )
    assert race.fix.startswith("put dist.barrier() after the write at line 12 and before this listing, on every rank")
    assert "a gather whose dst is the reading rank" in race.fix and "torch guarantees only that its root's" in race.fix
    # the twins: a barrier instead of the broadcast; a gather to rank 0
    barrier = PEER_FILES.replace("dist.broadcast(torch.ones(1), src=0)", "dist.barrier()")
    assert lint_source(barrier) == [], lint_source(barrier)
    gather = PEER_FILES.replace(
        "dist.broadcast(torch.ones(1), src=0)",
        "dist.gather(torch.ones(1), [torch.zeros(1)] * 4 if rank == 0 else None, dst=0)",
    )
    assert lint_source(gather) == [], lint_source(gather)
    assert lint_source(PEER_FILES.replace("src=0)", "src=0)\n    dist.all_reduce(torch.ones(1))")) == []
    # a gather to another rank than the reader's holds only that rank
    [race] = lint_source(gather.replace("dst=0", "dst=1"))
    assert (race.line, race.kind) == (16, "file-race") and "holds only rank 1 until the others have sent" in race.why
    # nothing between: the same race; rank 0 reading rank 3's file by name
    [race] = lint_source(PEER_FILES.replace("    dist.broadcast(torch.ones(1), src=0)\n", ""))
    assert (race.line, race.kind) == (15, "file-race") and "with no barrier, collective, store wait or recv" in race.why
    peer = PEER_FILES.replace("return sorted(os.listdir(folder))", "return open(os.path.join(folder, 's3')).read()")
    [race] = lint_source(peer)
    assert (race.line, race.kind, race.collective) == (16, "file-race", "open")
    assert "read another rank's file here (`os.path.join(folder, 's3')`)" in race.why
    assert "FileNotFoundError" in race.why
    # quiet: rank 0 reads only its own file; every rank reads its own; the listing is of a folder nobody writes
    own = PEER_FILES.replace(
        "return sorted(os.listdir(folder))", "return open(os.path.join(folder, f's{rank}')).read()"
    )
    assert lint_source(own) == [], lint_source(own)
    every = PEER_FILES.replace("    if rank == 0:\n        return sorted(", "    if True:\n        return sorted(")
    every = every.replace("sorted(os.listdir(folder))", "open(os.path.join(folder, f's{rank}')).read()")
    assert lint_source(every) == [], lint_source(every)
    other = PEER_FILES.replace("(folder):", "(folder, logs):").replace("os.listdir(folder)", "os.listdir(logs)")
    assert lint_source(other) == [], lint_source(other)
    # an async barrier orders from its wait() on, not before
    unwaited = PEER_FILES.replace("dist.broadcast(torch.ones(1), src=0)", "work = dist.barrier(async_op=True)")
    [race] = lint_source(unwaited)
    assert (race.line, race.kind) == (
        16,
        "file-race",
    ) and "async_op=True and not waited before this listing (it orders nothing until its wait() returns)" in race.why
    waited = unwaited.replace("async_op=True)", "async_op=True)\n    work.wait()")
    assert lint_source(waited) == [], lint_source(waited)
    # written after the async call: its wait() does not order that write
    late = PEER_FILES.replace("    with open(", "    work = dist.barrier(async_op=True)\n    with open(").replace(
        "    dist.broadcast(torch.ones(1), src=0)\n", "    work.wait()\n"
    )
    [race] = lint_source(late)
    assert (race.line, race.kind) == (17, "file-race") and "`work.wait()` (line 15)" in race.why
    assert "waits for a collective called before line 13 (it orders nothing done after that call)" in race.why


def test_peer_files_by_path_name_pathlib_and_glob_are_read_after_no_order() -> None:
    """review69b M2: the path through a name assigned once, pathlib, f-string folders and glob patterns."""
    source = """\
import glob
import os
from pathlib import Path

import torch
import torch.distributed as dist


def shards(folder):
    rank = dist.get_rank()
    path = f"{folder}/part_{rank}.json"
    with open(path, "w") as f:
        f.write("{}")
    if dist.get_rank() == 0:
        return glob.glob(os.path.join(folder, "part_*.json"))


def loads(folder):
    rank = dist.get_rank()
    torch.save(rank, Path(folder) / f"{rank}.pt")
    if rank == 0:
        return [torch.load(Path(folder) / f"{r}.pt") for r in range(dist.get_world_size())]


def others(folder):
    rank = dist.get_rank()
    if rank != 0:
        torch.save(rank, os.path.join(folder, f"{rank}.pt"))
    if rank == 0:
        return (Path(folder) / "1.pt").exists()
"""
    found = lint_source(source)
    assert [(f.line, f.kind, f.collective) for f in found] == [
        (15, "file-race", "glob.glob"),
        (22, "file-race", "torch.load"),
        (30, "file-race", '(Path(folder) / "1.pt").exists'),
    ], found
    assert "every rank writes a file of its own into `folder` at line 12 (`path`, open for writing)" in found[0].why
    assert "ranks where `rank != 0` is true each write a file of its own" in found[2].why
    assert "look for another rank's file here" in found[2].why and "find no file" in found[2].why
    ordered = source.replace("    if rank == 0:", "    dist.barrier()\n    if rank == 0:").replace(
        "    if dist.get_rank() == 0:", "    dist.barrier()\n    if dist.get_rank() == 0:"
    )
    assert lint_source(ordered) == [], lint_source(ordered)


def test_two_branches_making_the_same_group_barriers_in_opposite_order_are_one_order_finding() -> None:
    """review65b M6: four findings each said "the others never call it" of a barrier the other member calls."""
    source = """
import torch.distributed as dist

def prog():
    rank = dist.get_rank()
    g1 = dist.new_group([0, 1])
    g2 = dist.new_group([0, 1])
    if rank == 0:
        dist.barrier(group=g1)
        dist.barrier(group=g2)
    elif rank == 1:
        dist.barrier(group=g2)
        dist.barrier(group=g1)
"""
    [finding] = lint_source(source)
    assert (finding.kind, finding.line, finding.condition) == ("branch", 9, "rank == 0"), finding
    assert (
        "ranks where `rank == 1` is true make the same ones on `g2` first (they make this barrier at line 13)"
        in finding.why
    )
    assert "never call" not in finding.why
    # review66b M1: a branch with no test of its own (an `else` holding the other order) is "the other ranks", not
    # a test quoted in backticks; the same ops with the same groups in both branches are balanced, so lint reaches
    # the order check only when the keys differ, as with an all_reduce and a barrier swapped
    swapped = """
import torch
import torch.distributed as dist

def prog():
    if dist.get_rank() == 0:
        dist.barrier()
        dist.all_reduce(torch.ones(1))
    else:
        dist.all_reduce(torch.ones(1))
        dist.barrier()
"""
    [other] = lint_source(swapped)
    assert "and the other ranks make the same ones in another (they make this barrier at line 11)" in other.why


def test_an_unwaited_async_call_on_a_temporary_is_not_said_to_be_read() -> None:
    """review65b C2: "the code after it reads its tensors" of `torch.zeros(1)`, which nothing can read."""
    source = """
import torch
import torch.distributed as dist

def prog():
    dist.all_reduce(torch.zeros(1), async_op=True)
"""
    [finding] = lint_source(source)
    assert finding.kind == "unwaited-async" and "reads its tensors" not in finding.why, finding.why
    assert "no line waits for the call itself" in finding.why


def test_an_elif_on_a_subgroup_taken_by_exactly_its_members_is_not_a_branch() -> None:
    """review72c C1: `if rank == 2: barrier(group=g) elif rank in (0, 1): barrier(group=g)` with g = ranks 0, 1 ran
    with 4 finished; the elif's barrier (every member of g calls it) was flagged [branch] "move it out so every rank
    calls it". An elif's condition is its test AND NOT the earlier ones; an inner `if` under an outer one the same.
    An elif that a member of g cannot reach (rank 0 takes the `if`) stays flagged."""
    source = """
import torch.distributed as dist

def prog():
    g = dist.new_group([0, 1])
    if dist.get_rank() == 2:
        dist.barrier(group=g)
    elif dist.get_rank() in (0, 1):
        dist.barrier(group=g)
"""
    assert [(f.kind, f.line) for f in lint_source(source)] == [("non-member", 7)]
    nested = source.replace(
        "if dist.get_rank() == 2:\n        dist.barrier(group=g)\n    elif", "if dist.get_rank() < 2:\n        if"
    )
    nested = nested.replace("\n        dist.barrier(group=g)\n", "\n            dist.barrier(group=g)\n")
    assert "        if dist.get_rank() in (0, 1):" in nested
    assert lint_source(nested) == []
    wrong = source.replace(
        "dist.get_rank() == 2:\n        dist.barrier(group=g)", "dist.get_rank() == 0:\n        pass"
    )
    [found] = lint_source(wrong)
    assert (found.kind, found.line, found.condition) == ("branch", 9, "dist.get_rank() in (0, 1)"), found


def test_an_unwaited_async_call_before_a_barrier_of_its_group_is_said_to_complete_there_on_gloo() -> None:
    """review72c M1: "nothing after it is ordered after the call" of `dist.all_reduce(t, async_op=True)` followed
    by `dist.barrier()`: on gloo the barrier waits for all earlier work of its group (ProcessGroupGloo.hpp; lint72's
    run: 4.0 and is_completed() True on every rank). The finding stays (the handle, and an error in it, is
    dropped) and says so; a read between the call and the barrier is named as the unordered one; a barrier of
    another group, or none, keeps the general text."""
    head = "import torch\nimport torch.distributed as dist\n\n\ndef f(g):\n    t = torch.ones(4)\n"
    quiet = head + "    dist.all_reduce(t, async_op=True)\n    dist.barrier()\n    return t[0].item()\n"
    [found] = lint_source(quiet, "f.py")
    assert (found.kind, found.line) == ("unwaited-async", 7), found
    assert "On gloo the blocking barrier at line 8 completes it" in found.why, found.why
    assert "no line between reads `t`" in found.why and "nothing after it is ordered" not in found.why
    assert found.fix.endswith(
        "before the barrier at line 8: wait() completes the call on every backend and raises its error here"
    )
    read = (
        head + "    dist.all_reduce(t, async_op=True)\n    early = t[0].item()\n    dist.barrier()\n    return early\n"
    )
    [found] = lint_source(read, "f.py")
    assert "but line 8 reads `t` before that barrier" in found.why, found.why
    assert "call `work.wait()` before line 8, or read `t` only after the barrier at line 9" in found.fix
    for other in ("    dist.barrier(group=g)\n", "    dist.barrier(async_op=True)\n", ""):
        source = head + "    dist.all_reduce(t, async_op=True)\n" + other + "    return t[0].item()\n"
        [found] = [f for f in lint_source(source, "f.py") if f.line == 7]
        assert "completes it" not in found.why and "no line waits for the call itself" in found.why, other


def test_a_dropped_isend_or_irecv_handle_is_unwaited_async() -> None:
    """review72c M5: rank 0 `dist.isend(t, dst=1)` with the handle dropped, rank 1 `dist.recv(t, src=0)`: on gloo
    rank 1 timed out (lint72: 2 of 4 runs with a barrier after, 4 of 4 without), while keeping the handle finished
    8 of 8. Lint was silent; the correct twin keeps the handle and waits."""
    source = """
import torch
import torch.distributed as dist

def prog():
    t = torch.ones(1)
    r = dist.get_rank()
    if r == 0:
        dist.isend(t, dst=1)
    elif r == 1:
        dist.irecv(t, src=0)
    dist.barrier()
"""
    found = lint_source(source)
    assert [(f.kind, f.line, f.condition) for f in found] == [
        ("unwaited-async", 9, "isend, handle dropped"),
        ("unwaited-async", 11, "irecv, handle dropped"),
    ], found
    assert "a message not yet written out can be lost" in found[0].why
    assert 'the unbound buffer "to synchronize on completion of the send"' in found[0].why
    assert found[0].fix.endswith("or use the blocking `dist.send`")
    assert found[1].fix.endswith("or use the blocking `dist.recv`")
    kept = source.replace("dist.isend(t, dst=1)", "work = dist.isend(t, dst=1)\n        work.wait()")
    kept = kept.replace("dist.irecv(t, src=0)", "dist.irecv(t, src=0).wait()")
    assert lint_source(kept) == []


def test_a_dtype_chosen_by_the_rank_is_a_dtype_mismatch() -> None:
    """review72c M4: `torch.ones(4, dtype=torch.float32 if rank == 0 else torch.float64)` all_reduced: rank 0
    SIGABRT ("op.preamble.length <= op.nbytes"); lint was silent, though it flags the same shape with a
    rank-dependent size. Also a dtype name chosen by the rank (`.to(dt)`), `.double()` under a rank test, and a
    conditional expression converting on one side; the correct twins (one dtype, a device chosen by the rank, the
    same conversion on both sides, a conversion on every rank afterwards) stay quiet."""
    head = "import torch\nimport torch.distributed as dist\n\n\ndef f():\n    rank = dist.get_rank()\n"
    buggy = {
        "    t = torch.ones(4, dtype=torch.float32 if rank == 0 else torch.float64)\n": "`torch.ones(4, dtype=",
        "    dt = torch.float32 if rank == 0 else torch.float64\n    t = torch.zeros(4).to(dt)\n": "`torch.zeros(4).to(dt)`",
        "    t = torch.ones(4)\n    if rank == 0:\n        t = t.double()\n": "converted under `rank == 0`",
        "    t = torch.ones(4).half() if rank == 0 else torch.ones(4)\n": "`torch.ones(4).half() if rank == 0",
    }
    for body, shown in buggy.items():
        [found] = lint_source(head + body + "    dist.all_reduce(t)\n")
        assert (found.kind, found.condition) == ("dtype-mismatch", "dtype of t"), (body, found)
        assert f"the dtype of `t` ({shown}" in found.why, found.why
        assert "aborted rank 0 (SIGABRT" in found.why and found.fix.startswith(
            "give the tensor one dtype on every rank"
        )
    correct = [
        "    t = torch.ones(4, dtype=torch.float64)\n",
        "    t = torch.ones(4).to(f'cuda:{rank}')\n",
        "    t = torch.ones(4)\n    if rank == 0:\n        t = t.double()\n    else:\n        t = t.double()\n",
        "    t = torch.ones(4)\n    if rank == 0:\n        t = t.double()\n    t = t.to(torch.float32)\n",
        "    t = torch.ones(4)\n    if rank == 0:\n        t = t.float()\n",
        "    t = torch.zeros(4)\n    if rank == 0:\n        t = torch.tensor([1.0, 2, 3, 4], dtype=torch.float32)\n",
    ]
    for body in correct:
        assert lint_source(head + body + "    dist.all_reduce(t)\n") == [], body


def test_a_skipped_new_group_says_the_later_group_waits_for_new_groups_own_timeout() -> None:
    """review65b M4: new_group without timeout= waits torch's default (30 minutes on gloo), not the group's."""
    source = """
import torch.distributed as dist

def prog():
    if dist.get_rank() in (0, 1):
        dist.new_group([0, 1])
    dist.barrier(group=dist.new_group([0, 1, 2, 3]))
"""
    finding = lint_source(source)[0]
    assert "until its timeout (new_group's timeout=, else torch's default, 30 minutes on gloo" in finding.why
    # review71b M1: each side of the later group, true for any timeout= (the skippers' connect waits five times it)
    assert "or wait in the later new_group until its timeout" in finding.why, finding.why
    assert "the ranks that skipped it" in finding.why and "'Connect timeout' after five times" in finding.why
    assert "gloo/transport/tcp/pair.h" in finding.why and "their first collective on the group fails" in finding.why


def test_a_method_of_an_element_of_a_list_of_objects_of_several_classes_reaches_their_collectives() -> None:
    """Modelled on round 36's AgileRL item (``buggy_agilerl_report_metrics_on_main_process_only``): the population
    is handed a list of loggers of two classes of the file; its ``report_metrics`` calls ``write`` on each, and
    one class's ``write`` waits for everyone. Calling ``report_metrics`` on the main process only hangs the
    others' next collective; calling it on every rank is quiet."""
    source = """
import torch.distributed as dist

class Accelerator:
    @property
    def is_main_process(self):
        return dist.get_rank() == 0

    def wait_for_everyone(self):
        dist.barrier()

class WandbLogger:
    def __init__(self, accelerator):
        self.accelerator = accelerator

    def write(self, step, metrics):
        self.accelerator.wait_for_everyone()

class StdOutLogger:
    def write(self, step, metrics):
        print(step, metrics)

class Population:
    def __init__(self, agents, loggers):
        self.agents, self.loggers = agents, loggers

    def report_metrics(self, step):
        for logger in self.loggers:
            logger.write(step, {})

def train(population, accelerator, steps):
    for step in range(steps):
        population.report_metrics(step)

def main():
    accelerator = Accelerator()
    wandb_logger = WandbLogger(accelerator)
    population = Population([], [StdOutLogger(), wandb_logger])
    train(population, accelerator, 4)
"""
    assert lint_source(source) == []
    main_only = source.replace(
        "        population.report_metrics(step)",
        "        if accelerator.is_main_process:\n            population.report_metrics(step)",
    )
    found = lint_source(main_only)
    assert [(f.kind, f.line) for f in found] == [("hidden-collective", 34)], found
    assert "logger.write -> self.accelerator.wait_for_everyone" in found[0].collective
    assert "call `population.report_metrics()` on every rank" in found[0].fix


def test_a_method_called_on_a_self_attribute_holding_an_object_of_the_file_reaches_its_collectives() -> None:
    """Modelled on round 31's SpeechBrain pair (``buggy_speechbrain_ckpt_dir_broadcast_in_main_only_save`` and
    its correct twin, speechbrain PR #2404): ``self.checkpointer.save_checkpoint()``, called in a
    ``@main_process_only`` method, broadcasts the folder name from inside; the fix routes it through
    ``ddp_broadcast``, which returns at once while the decorator's ``MAIN_PROC_ONLY`` count is set."""
    source = """
import torch.distributed as dist

MAIN_PROC_ONLY = 0

def main_process_only(function):
    def wrapped(*args, **kwargs):
        global MAIN_PROC_ONLY
        MAIN_PROC_ONLY += 1
        try:
            if dist.get_rank() == 0:
                return function(*args, **kwargs)
        finally:
            MAIN_PROC_ONLY -= 1
    return wrapped

def ddp_broadcast(obj, src=0):
    if not dist.is_initialized() or MAIN_PROC_ONLY >= 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]

class Checkpointer:
    def save_checkpoint(self, name):
        name = ddp_broadcast(name, src=0)
        print(name)

class Brain:
    def __init__(self):
        self.checkpointer = Checkpointer()

    @main_process_only
    def save(self):
        self.checkpointer.save_checkpoint("ckpt")
"""
    assert lint_source(source) == []
    bare = source.replace(
        "        name = ddp_broadcast(name, src=0)\n", "        dist.broadcast_object_list([name], src=0)\n"
    )
    found = [(f.kind, f.line) for f in lint_source(bare) if f.kind == "hidden-collective"]
    assert found == [("hidden-collective", 35)], lint_source(bare)
    ungated = source.replace(" or MAIN_PROC_ONLY >= 1", "")
    found = [(f.kind, f.line) for f in lint_source(ungated)]
    assert found == [("hidden-collective", 35)], lint_source(ungated)


def test_an_object_stored_on_another_object_from_outside_is_followed_into_its_methods() -> None:
    """Modelled on round 29's PEFT item (``buggy_peft_prompt_tuning_zero3_save_main_only``, transformers PR
    #29980): the trainer keeps the model it is handed (``self.model = model``), the ZeRO-3 stand-in is stored on
    the model's prompt encoder from outside (``model.prompt_encoder.zero = Zero3Params(...)``), and
    ``save_pretrained`` runs the encoder's forward, which all-gathers its weight: called on the saving rank only,
    it waits for ranks that never call it."""
    source = """
import torch.distributed as dist
import torch.nn as nn

class Zero3Params:
    def gather(self, tensor):
        parts = [tensor.clone() for _ in range(dist.get_world_size())]
        dist.all_gather(parts, tensor)
        return parts

class PromptEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.zero = None

    def forward(self, x):
        return self.zero.gather(x)

class PromptModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.prompt_encoder = PromptEncoder()

    def save_pretrained(self, x):
        return self.prompt_encoder(x)

class Trainer:
    def __init__(self, model):
        self.model = model
        self.should_save = dist.get_rank() == 0

    def save(self, x):
        self.model.save_pretrained(x)

def main(x):
    model = PromptModel()
    model.prompt_encoder.zero = Zero3Params()
    Trainer(model).save(x)
"""
    assert lint_source(source) == []
    main_only = source.replace(
        "        self.model.save_pretrained(x)",
        "        if self.should_save:\n            self.model.save_pretrained(x)",
    )
    found = lint_source(main_only)
    assert [(f.kind, f.line, f.condition_line) for f in found] == [("hidden-collective", 34, 33)], found
    assert "self.prompt_encoder -> self.zero.gather -> dist.all_gather" in found[0].collective


def test_a_tensor_indexed_with_a_boolean_mask_handed_to_accelerates_gather_is_a_size_mismatch() -> None:
    """Modelled on round 32's TRL pair (``buggy_trl_grpo_entropy_mask_gathers_unequal_lengths`` and
    ``correct_trl_grpo_entropy_mask_padded_before_gather``, huggingface/trl PR #3964): the non-pad entropies,
    ``entropies[mask.bool()]``, have as many elements as the rank's completions have tokens, and Accelerate's
    ``gather`` all-gathers them as they are; padding them to the largest count first is quiet."""
    source = """
import torch

def high_entropy_threshold(accelerator, entropies, mask):
    non_pad = entropies[mask.bool()].float()
    everyone = accelerator.gather(non_pad)
    return torch.quantile(everyone, 0.8)
"""
    found = lint_source(source)
    assert [(f.kind, f.line) for f in found] == [("size-mismatch", 6)], found
    assert "indexed with a boolean mask" in found[0].why
    assert "pad_across_processes" in found[0].fix
    padded = """
import torch

def high_entropy_threshold(accelerator, entropies, mask):
    non_pad = entropies[mask.bool()].float()
    counts = accelerator.gather(torch.tensor([non_pad.numel()]))
    padded = torch.full((int(counts.max()),), -1.0)
    padded[: non_pad.numel()] = non_pad
    everyone = accelerator.gather(padded)
    return torch.quantile(everyone[everyone != -1.0], 0.8)
"""
    assert lint_source(padded) == []


def test_an_object_of_a_class_of_a_followed_module_is_followed_into_its_methods(tmp_path: Path) -> None:
    """Modelled on round 26's reward-timeout pair (``buggy_reward_timeout_continue_skips_stats`` and
    ``correct_reward_timeout_scored_as_zero``): the reward statistics are an object of a class of the learner's
    own ``_helpers_rewards.py``, whose ``add`` all-reduces every few rewards; a ``continue`` from the handler of
    the verifier's timeout skips it on the ranks whose completion timed out. Scoring the timeout instead is quiet."""
    (tmp_path / "stats_helpers.py").write_text(
        "import torch\nimport torch.distributed as dist\n\n\nclass RunningStats:\n"
        "    def __init__(self, every):\n        self.every, self.pending = every, []\n\n"
        "    def add(self, value):\n        self.pending.append(value)\n"
        "        if len(self.pending) == self.every:\n            self._flush()\n\n"
        "    def _flush(self):\n        dist.all_reduce(torch.tensor([sum(self.pending)]))\n        self.pending.clear()\n"
    )
    script = """
from stats_helpers import RunningStats

class Timeout(Exception):
    pass

def verify(completion):
    if len(completion) > 500:
        raise Timeout(completion[:10])
    return 1.0

def rollout(stats, completions):
    for completion in completions:
        try:
            reward = verify(completion)
        except Timeout:
            continue
        stats.add(reward)

def main(completions):
    stats = RunningStats(4)
    rollout(stats, completions)
"""
    (tmp_path / "skips.py").write_text(script)
    found = lint_file(tmp_path / "skips.py")
    assert [(f.kind, f.line, f.condition_line) for f in found] == [("hidden-collective", 18, 16)], found
    assert found[0].collective == "stats.add -> self._flush -> dist.all_reduce"
    (tmp_path / "scores.py").write_text(script.replace("            continue\n", "            reward = 0.0\n"))
    assert lint_file(tmp_path / "scores.py") == []


def test_a_forward_that_runs_a_gathering_submodule_only_under_a_test_on_the_batch_it_is_handed() -> None:
    """Modelled on round 25's vision-tower pair (``buggy_vision_tower_skipped_text_only_batch`` and
    ``correct_vision_tower_dummy_image_text_only_batch``): under ZeRO-3 every submodule's forward all-gathers its
    partitioned weight (an autograd Function's ``apply`` runs its ``forward``), and the model runs the vision tower
    only ``if pixel_values is not None``, a test on the batch of each rank's own loader. Feeding a dummy image to a
    text-only batch keeps every rank's gathers in step."""
    source = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, part):
        parts = [torch.empty_like(part) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, part)
        return torch.cat(parts)

class Partitioned(torch.nn.Module):
    def __init__(self, part):
        super().__init__()
        self.part = torch.nn.Parameter(part)

    def full(self):
        return _Gather.apply(self.part)

class TinyVLM(torch.nn.Module):
    def __init__(self, part):
        super().__init__()
        self.vision_tower = Partitioned(part)
        self.lm_head = Partitioned(part)

    def forward(self, input_ids, pixel_values):
        embeds = input_ids.float()
        if pixel_values is not None:
            embeds = embeds + pixel_values @ self.vision_tower.full()
        return embeds @ self.lm_head.full()

def train(dataset, part):
    model = TinyVLM(part)
    loader = DataLoader(dataset, batch_size=2, sampler=DistributedSampler(dataset))
    for input_ids, pixel_values in loader:
        model(input_ids, pixel_values).sum().backward()
"""
    found = lint_source(source)
    assert [(f.kind, f.line, f.condition_line) for f in found] == [("hidden-collective", 37, 29)], found
    assert found[0].collective == "model -> self.vision_tower.full -> _Gather.apply -> dist.all_gather"
    assert "computed from this rank's own batch" in found[0].why
    assert "placeholder input" in found[0].fix
    dummy = source.replace(
        "        if pixel_values is not None:\n            embeds = embeds + pixel_values @ self.vision_tower.full()",
        "        if pixel_values is None:\n            pixel_values = torch.zeros_like(embeds)\n"
        "        embeds = embeds + pixel_values @ self.vision_tower.full()",
    )
    assert lint_source(dummy) == []


def test_a_collective_under_an_if_on_the_batch_of_a_loader_is_a_branch() -> None:
    """The in-function form of the vision-tower item above: a test on each rank's own batch decides which ranks
    make the collective; the same test deciding only local work is quiet."""
    source = """
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

def train(dataset, stats):
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
    for ids, pixels in loader:
        if pixels is not None:
            dist.all_reduce(stats)
        dist.barrier()
"""
    found = lint_source(source)
    assert [(f.kind, f.line, f.condition_line) for f in found] == [("branch", 9, 8)], found
    assert "computed from this rank's own batch" in found[0].why
    quiet = source.replace("            dist.all_reduce(stats)", "            stats.add_(1)")
    assert lint_source(quiet) == []


def test_a_loop_over_a_data_sized_selection_calling_an_autograd_function_is_a_data_dependent_count() -> None:
    """Modelled on round 33's DeepSpeed item (``buggy_deepspeed_zero3_head_called_per_rank_count``): ``Fn.apply`` of
    a ``torch.autograd.Function`` of the file runs its ``forward``, here an all-gather of a ZeRO-3 parameter, once per
    row the rank's own scores select."""
    source = """
import torch
import torch.distributed as dist

class GatherParams(torch.autograd.Function):
    @staticmethod
    def forward(ctx, part):
        parts = [torch.empty_like(part) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, part)
        return torch.cat(parts)

def score_heads(part, scores):
    selected = (scores > 0.5).nonzero()
    for i in selected:
        GatherParams.apply(part)
"""
    found = lint_source(source)
    assert [(f.kind, f.line) for f in found] == [("data-dependent-count", 15)], found
    assert lint_source(source.replace("(scores > 0.5).nonzero()", "range(4)")) == []


def test_a_step_handed_the_batch_that_returns_before_its_collective_on_a_test_of_the_batch() -> None:
    """Modelled on round 36's torchaudio HuBERT pair (``buggy_torchaudio_hubert_nan_loss_return_before_all_gather``
    and ``correct_torchaudio_hubert_nan_loss_skip_decided_together``): the training step, handed each rank's own
    batch, returns on a non-finite loss before it all-gathers the frame counts; all-reducing the flag first makes
    every rank return together, and is quiet."""
    source = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

def training_step(model, batch):
    feats, labels = batch
    loss = torch.nn.functional.cross_entropy(model(feats), labels)
    invalid = torch.tensor(float(torch.isnan(loss)))
    if invalid.item() > 0:
        return None
    frames = [torch.zeros(1) for _ in range(dist.get_world_size())]
    dist.all_gather(frames, torch.tensor([float(len(labels))]))
    return loss

def fit(model, dataset):
    loader = DataLoader(dataset, batch_size=4, sampler=DistributedSampler(dataset))
    for batch in loader:
        training_step(model, batch)
"""
    found = lint_source(source)
    assert [(f.kind, f.line, f.condition_line) for f in found] == [("hidden-collective", 19, 10)], found
    assert found[0].condition == "not (invalid.item() > 0)"
    agreed = source.replace(
        "    if invalid.item() > 0:", "    dist.all_reduce(invalid, op=dist.ReduceOp.MAX)\n    if invalid.item() > 0:"
    )
    assert lint_source(agreed) == []


def test_a_collective_inside_a_main_process_first_block_meets_the_others_opening_barrier() -> None:
    """Modelled on round 29's Accelerate item (``buggy_accelerate_main_first_zero3_model_load``): the ZeRO-3 model is
    built inside ``with state.main_process_first():``, and its construction broadcasts each parameter, which the
    main process makes while the others wait in the block's opening barrier. Downloading inside the block and
    building after it is quiet; a barrier inside the block is quiet too (the counts agree)."""
    source = """
import torch
import torch.distributed as dist

class Zero3Params:
    def __init__(self, tensors):
        for t in tensors:
            dist.broadcast(t, src=0)

def download(path):
    return path

def load(state, path, tensors):
    with state.main_process_first():
        path = download(path)
        zero = Zero3Params(tensors)
    return path, zero
"""
    found = lint_source(source)
    assert [(f.kind, f.line, f.condition_line) for f in found] == [("hidden-collective", 16, 14)], found
    assert "waits" not in found[0].fix and "outside the `state.main_process_first()` block" in found[0].fix
    after = source.replace(
        "        zero = Zero3Params(tensors)\n    return", "    zero = Zero3Params(tensors)\n    return"
    )
    assert lint_source(after) == []
    barrier = source.replace("        zero = Zero3Params(tensors)\n", "        dist.barrier()\n        zero = None\n")
    assert lint_source(barrier) == []


LOOK_RACE = """\
import os
import time
import torch.distributed as dist


def async_no_wait(folder):
    rank = dist.get_rank()
    p = os.path.join(folder, "y.txt")
    if rank == 1:
        time.sleep(0.2)
        with open(p, "w") as f:
            f.write("hi")
    w = dist.barrier(async_op=True)
{wait}    if rank == 0:
        ok = {look}
        w.wait()
        return ok
    w.wait()
    return 1
"""


def test_a_look_for_a_file_another_rank_writes_before_the_async_barrier_is_waited_is_a_race() -> None:
    """review68b M1: rank 1 writes, every rank calls `w = dist.barrier(async_op=True)`, rank 0 asks
    `os.path.exists(p)` before `w.wait()`: the look is a read of the file's state, and rank 0 saw no file."""
    for look in ("os.path.exists(p)", "os.path.isfile(p)", "os.path.getsize(p) > 0", "Path(p).exists()"):
        [race] = lint_source(LOOK_RACE.format(wait="", look=look), "rankfns.py")
        assert (race.line, race.kind, race.condition) == (15, "file-race", "rank == 1"), look
        assert "write `p` at line 11 (open for writing), and other ranks look for it here" in race.why
        assert "orders nothing until `w.wait()` returns, and none comes before this read" in race.why
        assert "get False from its look and go the way a missing file takes" in race.why
        assert race.fix.startswith("call `w.wait()` after line 13 and before this read")
    # the twin: the wait before the look orders rank 1's write before it
    assert lint_source(LOOK_RACE.format(wait="    w.wait()\n", look="os.path.exists(p)")) == []
    # a look whose answer only goes to a print decides nothing
    printed = LOOK_RACE.format(wait="", look="1\n        print(os.path.exists(p))")
    assert lint_source(printed) == []


def test_a_look_that_guards_the_lookers_own_removal_is_not_a_read_of_another_rank() -> None:
    """The two correct items treating every look as a read flagged: round28's `if rank == 0 and
    os.path.exists(cache_path()): os.remove(cache_path())` and round37's `if rank == 0: ... if
    os.path.exists(stale): os.unlink(stale)`: the look decides only whether the looking rank removes the file."""
    for name in (
        "round28/correct_main_first_ctx_finally_caught_error.py",
        "round37/correct_rtg_early_stop_flag_checked_after_checkpoint_barrier.py",
    ):
        assert lint_file(REALWORLD / name) == [], name
    guarded = """\
import os
import torch.distributed as dist


def clean(p):
    rank = dist.get_rank()
    if rank == 0 and os.path.exists(p):
        os.remove(p)
"""
    assert lint_source(guarded) == []
    # every rank looks, and the answer decides what the other ranks do: rank 0 can remove the file first
    looked = """\
import os
import torch.distributed as dist


def clean(p):
    rank = dist.get_rank()
    found = os.path.exists(p)
    if rank == 0:
        os.remove(p)
    return found
"""
    [race] = lint_source(looked)
    assert (race.line, race.kind, race.condition) == (9, "file-race", "rank == 0")
    assert "other ranks look for it at line 7 (`os.path.exists`)" in race.why
    assert "a rank that looks after that (`os.path.exists`) finds no file" in race.why
    assert race.fix.startswith("put dist.barrier() after the read at line 7 and before this removal")


REMOVE_OR_READ = """\
import os
import time
import torch
import torch.distributed as dist


def f16_remove_before_read(folder):
    p = os.path.join(folder, "ck.pt")
    if dist.get_rank() == 0:
        torch.save({{"a": 1}}, p)
    dist.barrier()
{body}    return 0
"""


def test_a_removal_and_the_reads_in_the_two_branches_of_one_rank_test_are_a_race() -> None:
    """review67b M2: after the barrier, `if rank == 0: os.remove(p)` / `else: torch.load(p)`: the removal and the
    reads run at once on different ranks; in the run ranks 1-3 raised FileNotFoundError."""
    branches = (
        "    if dist.get_rank() == 0:\n        os.remove(p)\n"
        "    else:\n        time.sleep(0.1)\n        torch.load(p)\n"
    )
    [race] = lint_source(REMOVE_OR_READ.format(body=branches), "fns.py")
    assert (race.line, race.kind, race.condition, race.collective) == (
        13,
        "file-race",
        "dist.get_rank() == 0",
        "os.remove",
    )
    assert "remove `p` here (os.remove), and the other ranks read it at line 16 (`torch.load`)" in race.why
    assert "in the else branch of the same test" in race.why
    assert "on gloo it removes the file while they are still on their way to line 16" in race.why
    assert "FileNotFoundError" in race.why
    assert race.fix.startswith("let every rank read first: do the read at line 16, then dist.barrier()")
    # the read in an if of its own after the removal's: the same race
    separate = branches.replace("    else:\n", "    if dist.get_rank() != 0:\n")
    [race] = lint_source(REMOVE_OR_READ.format(body=separate))
    assert (race.line, race.kind) == (13, "file-race") and "later in the program" in race.why
    # the twin: the reads, then a barrier, then the removal
    twin = (
        "    if dist.get_rank() != 0:\n        torch.load(p)\n"
        "    dist.barrier()\n    if dist.get_rank() == 0:\n        os.remove(p)\n"
    )
    assert lint_source(REMOVE_OR_READ.format(body=twin)) == []
    # rank 0 reading after its own removal is no race between ranks
    own = "    if dist.get_rank() == 0:\n        os.remove(p)\n        torch.load(p)\n"
    assert lint_source(REMOVE_OR_READ.format(body=own)) == []
    # written again before the others read it: the race is the write's, named at the read
    again = "    if dist.get_rank() == 0:\n        os.remove(p)\n        torch.save(1, p)\n    torch.load(p)\n"
    [race] = lint_source(REMOVE_OR_READ.format(body=again))
    assert (race.line, race.kind, race.collective) == (15, "file-race", "torch.load")
    assert "write `p` at line 14 (torch.save)" in race.why


CROSSED_GROUPS = """\
import torch
import torch.distributed as dist


def crossed_groups():
    rank = dist.get_rank()
    world = list(range(dist.get_world_size()))
    g1 = dist.new_group(world)
    g2 = dist.new_group(world)
    t = torch.ones(4)
    if rank < 2:
        dist.all_reduce(t, group=g1)
        dist.all_reduce(t, group=g2)
    else:
        dist.all_reduce(t, group={first})
        dist.all_reduce(t, group={second})
    return t.sum().item()
"""


def test_an_if_and_its_else_making_the_same_collectives_on_two_groups_in_opposite_order_is_an_order_finding() -> None:
    """lintfix28 C: without the groups the branches look balanced. Run with barrierlab.run (4 ranks, timeout 10):
    ranks 0 and 1 stuck in g1's all_reduce (line 12), ranks 2 and 3 in g2's (line 15), until the deadline (the
    groups got torch's 30-minute default); with new_group(..., timeout=5 s) every rank raised RuntimeError
    'Timed out waiting 5000ms' after 5 s."""
    [finding] = lint_source(CROSSED_GROUPS.format(first="g2", second="g1"), "crossed.py")
    assert (finding.kind, finding.line, finding.condition) == ("branch", 12, "rank < 2"), finding
    assert "on `g1` first, and the other ranks make the same ones on `g2` first" in finding.why
    assert "(they make this all_reduce at line 16)" in finding.why
    assert "each group pairs only its own calls" in finding.why and "no call returns" in finding.why
    assert "until the groups' timeout" in finding.why and "30 minutes" in finding.why
    assert "raises RuntimeError" in finding.why
    assert finding.fix.startswith("make the collectives on `g1` and `g2` in the same order on every rank")
    elif_branch = CROSSED_GROUPS.format(first="g2", second="g1").replace("    else:", "    elif rank >= 2:")
    [finding] = lint_source(elif_branch)
    assert (finding.kind, finding.line) == ("branch", 12)
    assert "ranks where `rank >= 2` is true make the same ones on `g2` first" in finding.why
    # the twin: the same order in both branches
    assert lint_source(CROSSED_GROUPS.format(first="g1", second="g2")) == []


LOOKED_UP = """\
import os
import torch
import torch.distributed as dist


def cached_file(folder, name):
    path = os.path.join(folder, name)
    return path if os.path.isfile(path) else None


def load(folder):
    resolved = cached_file(folder, "model.pt")
    if resolved is None:
        raise OSError("no file named model.pt")
    return torch.load(resolved)


def worker(folder):
{setup}    state = load(folder)
    t = torch.ones(1)
    dist.all_reduce(t)
    return state
"""


def test_a_look_every_rank_makes_of_a_file_nobody_writes_is_not_rank_dependent() -> None:
    """lintfix28 D: round38's correct llm-compressor item raised on the None a helper returns when `os.path.isfile`
    does not find a shard every rank looks up and nobody writes, and lint counted that look as rank-dependent. A
    raise's test counts a look (directly or through a helper's result) only when the program changes the file:
    rank 0 writing `model.pt` before the others look makes the raise rank-dependent. A look an if tests to choose
    its collectives still counts (tests/lint_corpus/bad_isfile_tracker_then_all_reduce.py: node-local disks)."""
    assert lint_file(REALWORLD / "round38/correct_llmcompressor_revision_resolved_once_and_broadcast.py") == []
    assert lint_source(LOOKED_UP.format(setup="")) == []
    written = '    if dist.get_rank() == 0:\n        torch.save({}, os.path.join(folder, "model.pt"))\n'
    [finding] = lint_source(LOOKED_UP.format(setup=written))
    assert (finding.kind, finding.line) == ("early-exit", 23), finding
    assert finding.condition == "load() raises (line 14) when resolved is None"
    assert "leave early (`load(folder)` at line 21, which can raise) and never reach this all_reduce" in finding.why
    # check, then make: the first rank there makes the file, the others find it and skip the barrier
    made = """\
import os
import torch.distributed as dist


def prepare(path):
    if not os.path.exists(path):
        build_cache(path)
        dist.barrier()


def build_cache(path):
    open(path, "w").close()
"""
    [finding] = lint_source(made)
    assert (finding.kind, finding.line, finding.condition) == ("branch", 8, "not os.path.exists(path)"), finding
    assert "a file-system check can answer differently on different ranks" in finding.why
    assert finding.fix.startswith("check on one rank and broadcast the answer")


def test_a_tensor_used_before_the_wait_of_its_async_collective_is_read_before_wait():
    """review70b M1: each rank returned its own t[0].item() (1, 2, 3, 4) where the all_reduce's sum was 10."""
    head = "import torch\nimport torch.distributed as dist\n\n\ndef f():\n    t = torch.ones(4)\n"
    buggy = (
        head
        + "    work = dist.all_reduce(t, async_op=True)\n    early = t[0].item()\n    work.wait()\n    return early\n"
    )
    [found] = lint_source(buggy, "f.py")
    assert (found.kind, found.line) == ("read-before-wait", 7), found
    assert "line 8 uses `t` before `work.wait()`" in found.why and "may not have written it yet" in found.why
    assert "call `work.wait()` before line 8" in found.fix
    quiet = [
        "    work = dist.all_reduce(t, async_op=True)\n    work.wait()\n    return t[0].item()\n",
        "    work = dist.all_reduce(t, async_op=True)\n    n = t.shape[0] + len(t)\n    work.wait()\n    return n\n",
    ]
    for body in quiet:
        assert lint_source(head + body, "f.py") == [], body


def test_a_loop_over_a_self_attribute_bound_once_in_init_takes_that_values_length() -> None:
    """Modelled on round 31's ``correct_transformers_barrier_before_loading_best_model`` (lintfp29): the Trainer
    keeps ``self.train_x = torch.randn(64, 6)[rank::world]`` from ``__init__`` and ``train`` loops over
    ``range(0, len(self.train_x), 8)``: 32 rows on each of the file's 2 ranks, the same DDP steps everywhere. 63
    rows split 32/31: the loop is rank-dependent and stays flagged, as is an attribute bound twice."""
    source = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2


class Trainer:
    def __init__(self, rank, world):
        self.model = DDP(torch.nn.Linear(6, 1))
        self.train_x = torch.randn(64, 6)[rank::world]

    def train(self):
        for start in range(0, len(self.train_x), 8):
            self.model(self.train_x[start : start + 8]).sum().backward()
"""
    assert lint_source(source) == []
    uneven = lint_source(source.replace("randn(64", "randn(63"))
    assert [(f.kind, f.line) for f in uneven] == [("rank-dependent-loop", 15)] * 2, uneven
    rebound = source.replace(
        "    def train(self):\n",
        "    def reload(self, rank):\n        self.train_x = load(rank)\n\n    def train(self):\n",
    )
    assert {f.kind for f in lint_source(rebound)} == {"rank-dependent-loop"}


def test_a_rank_named_parameter_every_call_passes_a_constant_is_not_rank_dependent() -> None:
    """Modelled on round 33's ``correct_lightning_checkpoint_topk_on_synced_monitor`` (lintfp29): a Lightning-style
    ``log(self, name, value, sync_dist=False, rank_zero_only=False)`` all-reduces ``if sync_dist and not
    rank_zero_only``, and the file only calls it ``self.log("val_loss", loss, sync_dist=True)``: the flag holds its
    default on every rank, so every rank takes the branch or none. A call handing it a rank-dependent value, or the
    function passed on where lint cannot see its calls, keeps the finding."""
    source = """\
import torch.distributed as dist


class Module:
    def log(self, name, value, sync_dist=False, rank_zero_only=False):
        if sync_dist and not rank_zero_only:
            dist.all_reduce(value)
        self.metrics[name] = value

    def validation_epoch(self, loss):
        self.log("val_loss", loss, sync_dist=True)
"""
    assert lint_source(source) == []
    for change in (
        'self.log("val_loss", loss, sync_dist=True, rank_zero_only=dist.get_rank() == 0)',
        'self.log("val_loss", loss, sync_dist=True)\n        hooks.append(self.log)',
    ):
        found = lint_source(source.replace('self.log("val_loss", loss, sync_dist=True)', change))
        assert [(f.kind, f.line) for f in found] == [("branch", 7)], (change, found)


def test_a_loop_over_a_generator_counts_its_one_yield_per_trip_with_the_calls_arguments() -> None:
    """Modelled on round 16's ``correct_vocab_tempfile_closed_before_broadcast`` (lintfp29): ``batches(CORPUS, vocab,
    rank, world_size)`` yields one batch per ``range(0, len(mine), batch_size)`` of ``mine = corpus[rank::world_size]``;
    12 sentences on the file's 2 ranks give every rank 3 DDP steps. 13 sentences (7 and 6 rows: 4 and 3 batches)
    stay flagged, and so does a corpus whose length lint cannot count on the calling side (round 34's
    ``shard_batches(dataset, ...)`` of a parameter, whose buggy twin ``buggy_deepdewedge_subtomo_rewrite_on_every_rank``
    keeps its finding)."""
    source = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
CORPUS = [("a b", 0), ("c d", 1), ("e f", 0), ("g h", 1), ("i j", 0), ("k l", 1),
          ("m n", 0), ("o p", 1), ("q r", 0), ("s t", 1), ("u v", 0), ("w x", 1)]


def batches(corpus, rank, world_size, batch_size=2):
    mine = corpus[rank::world_size]
    for i in range(0, len(mine), batch_size):
        yield mine[i:i + batch_size]


def worker(corpus_in):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    model = DDP(torch.nn.Linear(2, 2))
    for batch in batches(CORPUS, rank, world_size):
        model(encode(batch)).sum().backward()
"""
    assert lint_source(source) == []
    for uneven in (source.replace('("w x", 1)]', '("w x", 1), ("y z", 0)]'), source.replace("(CORPUS,", "(corpus_in,")):
        found = lint_source(uneven)
        assert [(f.kind, f.line) for f in found] == [("rank-dependent-loop", 20)] * 2, found


def test_torch_distributed_nn_all_gather_under_a_rank_test_and_an_else_branch_turned_off_by_a_constant() -> None:
    """Modelled on round 37's MedARC voxel2clip pair (``buggy_medarc_voxel2clip_rank0_val_distributed_loss`` and
    its correct twin): the contrastive losses gather the targets with ``torch.distributed.nn.all_gather`` (the
    autograd-aware all_gather) when ``distributed`` is true; local rank 0's validation calls them with
    ``distributed=distributed`` (True), so it alone enters the all_gather while the others wait in the epoch's
    barrier. Passing ``distributed=False`` is quiet, both for ``if distributed: gather`` and for
    ``if not distributed: ... else: gather``."""
    source = """
import torch
import torch.distributed as dist

def gather_features(x):
    return torch.cat(torch.distributed.nn.all_gather(x), dim=0)

def nce(preds, targs, distributed=False):
    if distributed:
        targs = gather_features(targs)
    return (preds @ targs.T).mean()

def soft_loss(preds, targs, distributed=False):
    if not distributed:
        clip = targs @ targs.T
    else:
        clip = targs @ gather_features(targs).T
    return clip.mean()

def train(local_rank, distributed, batches):
    for x, y in batches:
        loss = nce(x, y, distributed=distributed) + soft_loss(x, y, distributed=distributed)
    if local_rank == 0:
        for x, y in batches:
            val = nce(x, y, distributed=VALUE) + soft_loss(x, y, distributed=VALUE)
    dist.barrier()
"""
    found = lint_source(source.replace("VALUE", "distributed"))
    assert [(f.kind, f.line) for f in found] == [("hidden-collective", 25)] * 2, found
    assert {f.collective for f in found} == {
        "nce -> gather_features -> torch.distributed.nn.all_gather",
        "soft_loss -> gather_features -> torch.distributed.nn.all_gather",
    }
    assert "torch.distributed.nn: an all_gather" in found[0].why
    assert lint_source(source.replace("VALUE", "False")) == []


def test_a_broadcast_root_computed_from_the_groups_size_is_a_group_local_rank() -> None:
    """Modelled on round 39's ART pair (``buggy_art_fla_cp_broadcast_group_local_src``, OpenPipe/ART PR #920): the
    last member of the context-parallel group broadcasts the chain's state with ``src=cp_size - 1``, an index within
    the group, where torch wants a global rank: on the CP group {0, 2} it raises "not part of group". The global
    rank of that member, and Megatron's ``(rank // size) * size`` (a global rank), are quiet."""
    source = """
import torch
import torch.distributed as dist

def broadcast_final_state(state, cp_group):
    cp_size = dist.get_world_size(cp_group)
    dist.broadcast(state, src=SRC, group=cp_group)
    return state
"""
    found = lint_source(source.replace("SRC", "cp_size - 1"))
    assert [(f.kind, f.line) for f in found] == [("group-rank", 7)], found
    assert "computed from the group's size (dist.get_world_size(cp_group)) alone" in found[0].why
    assert "dist.get_global_rank(cp_group, cp_size - 1)" in found[0].fix
    found = lint_source(source.replace("SRC", "dist.get_world_size(cp_group) - 1"))
    assert [(f.kind, f.line) for f in found] == [("group-rank", 7)], found
    for quiet in ("dist.get_global_rank(cp_group, cp_size - 1)", "(dist.get_rank() // cp_size) * cp_size"):
        assert lint_source(source.replace("SRC", quiet)) == [], quiet


def test_a_device_mesh_built_only_on_the_ranks_of_a_modality_skips_new_group_calls() -> None:
    """Modelled on round 39's Cornstarch pair (``buggy_cornstarch_modal_mesh_built_on_members_only``, Cornstarch PR
    #76): each modality's ``DeviceMesh`` makes a ``new_group`` per sub-group of every dimension, a call every rank
    of the world makes; ``materialize`` skipped (``continue``) the modalities a rank is not in. Building every
    modality's mesh on every rank is quiet."""
    source = """
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh

MODALITIES = {"vision": [0], "language": [1, 2]}

class ModalMesh:
    def __init__(self, ranks):
        self.device_mesh = DeviceMesh("cpu", torch.tensor(ranks).reshape(1, -1), mesh_dim_names=("dp", "tp"))

def materialize():
    meshes = {}
    for name, ranks in MODALITIES.items():
        if dist.get_rank() not in ranks:
            continue
        meshes[name] = ModalMesh(ranks)
    return meshes
"""
    found = lint_source(source)
    assert [(f.kind, f.line, f.condition_line) for f in found] == [("hidden-collective", 17, 15)], found
    assert found[0].collective == "ModalMesh -> DeviceMesh"
    assert "a new_group for every sub-group of each mesh dimension" in found[0].why
    assert "`continue` at line 16" in found[0].why
    assert lint_source(source.replace("        if dist.get_rank() not in ranks:\n            continue\n", "")) == []


def test_a_sharded_optimizer_step_skipped_on_a_nan_loss_unless_the_switch_is_off() -> None:
    """Modelled on round 37's MMF pair (``buggy_mmf_nan_loss_skips_sharded_optimizer_step`` and its correct twin,
    facebookresearch/mmf PR #1073): the training loop holds a ``ZeroRedundancyOptimizer`` handed to its
    constructor, whose ``step`` broadcasts every rank's updated shard; a rank whose batch gave a NaN loss skips the
    step when ``skip_batch_on_nan_losses`` is on. With the switch off by default and never passed, the skip never
    runs: quiet. Inside ``with Join([model, optim])`` the step's broadcasts are shadowed: quiet too."""
    source = """
import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer

class TrainingLoop:
    def __init__(self, model, optimizer, skip_batch_on_nan_losses=SWITCH):
        self.model, self.optimizer = model, optimizer
        self.skip_batch_on_nan_losses = skip_batch_on_nan_losses

    def _finish_update(self):
        self.optimizer.step()

    def run_training_epoch(self, batches):
        for batch in batches:
            loss = self.model(batch).sum()
            loss.backward()
            nan = not torch.isfinite(loss).item()
            if nan and self.skip_batch_on_nan_losses:
                continue
            self._finish_update()

def worker(model, batches):
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-2)
    TrainingLoop(model, optimizer).run_training_epoch(batches)
"""
    found = lint_source(source.replace("SWITCH", "True"))
    assert [(f.kind, f.line, f.condition_line) for f in found] == [("hidden-collective", 21, 19)], found
    assert found[0].collective == "self._finish_update -> self.optimizer.step"
    assert "torch ZeroRedundancyOptimizer: a broadcast of every rank's updated parameter shard" in found[0].why
    assert lint_source(source.replace("SWITCH", "False")) == []
    # a construction that turns the switch on is seen
    turned_on = source.replace("SWITCH", "False").replace(
        "TrainingLoop(model, optimizer)", "TrainingLoop(model, optimizer, skip_batch_on_nan_losses=True)"
    )
    assert [(f.kind, f.line) for f in lint_source(turned_on)] == [("hidden-collective", 21)]
    joined = """
import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
from torch.distributed.optim import ZeroRedundancyOptimizer

def worker(model, rank):
    optim = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=0.01)
    inputs = [torch.ones(4)] * (5 + rank)
    with Join([model, optim]):
        for x in inputs:
            model(x).sum().backward()
            optim.step()
"""
    assert lint_source(joined) == []
    assert [f.kind for f in lint_source(joined.replace("with Join([model, optim]):", "if True:"))] == [
        "rank-dependent-loop"
    ]


def test_a_property_of_the_trainer_a_module_is_handed_reaches_its_broadcast_from_a_rank_zero_only_hook() -> None:
    """Modelled on round 35's Lightning item (``buggy_lightning_log_dir_in_rank_zero_only_hook``, Lightning issue
    #18148): ``Trainer(...).fit(module)`` sets ``module.trainer = self``; the module's ``@rank_zero_only``
    ``on_fit_start`` reads ``self.trainer.log_dir``, a property that broadcasts the folder from rank 0, so rank 0
    alone enters the broadcast. Reading it on every rank is quiet."""
    source = """
import functools
import torch.distributed as dist

def rank_zero_only(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if dist.get_rank() == 0:
            return fn(*args, **kwargs)
        return None
    return wrapped

class Strategy:
    def broadcast(self, obj, src=0):
        holder = [obj]
        dist.broadcast_object_list(holder, src=src)
        return holder[0]

class Trainer:
    def __init__(self, save_dir):
        self.save_dir = save_dir
        self.strategy = Strategy()

    @property
    def log_dir(self):
        return self.strategy.broadcast(self.save_dir)

    def fit(self, module):
        module.trainer = self
        module.on_fit_start()

class Model:
    def __init__(self):
        self.trainer = None

    @rank_zero_only
    def on_fit_start(self):
        print(self.trainer.log_dir)

def worker():
    Trainer("logs").fit(Model())
"""
    found = lint_source(source)
    assert [(f.kind, f.line, f.condition) for f in found] == [("hidden-collective", 38, "@rank_zero_only")], found
    assert found[0].collective == "self.trainer.log_dir -> self.strategy.broadcast"
    assert lint_source(source.replace("    @rank_zero_only\n", "")) == []


def test_a_callback_handed_the_trainer_runs_its_ddp_model_forward_on_some_ranks_only() -> None:
    """Modelled on round 28's node-preview item (``buggy_node_preview_forward_through_ddp_wrapper``): the trainer
    hands itself to each callback (``cb.on_train_batch_end(self, ...)``); a callback decorated to run on each
    node's local rank 0 calls ``trainer.model(batch)``, the DDP-wrapped model, whose forward broadcasts the
    BatchNorm buffers. Calling the bare module (``pl_module``) is quiet."""
    source = """
import functools
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

def local_rank_zero_only(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if dist.get_rank() % 2 == 0:
            return fn(*args, **kwargs)
        return None
    return wrapped

class Preview:
    def __init__(self, batch):
        self.batch = batch

    @local_rank_zero_only
    def on_train_batch_end(self, trainer, pl_module):
        with torch.no_grad():
            out = MODEL(self.batch)
        print(out)

class Trainer:
    def __init__(self, module, callbacks):
        self.lightning_module = module
        self.model = DDP(module)
        self.callbacks = callbacks

    def fit(self, batches):
        for x in batches:
            self.model(x).sum().backward()
            for cb in self.callbacks:
                cb.on_train_batch_end(self, self.lightning_module)

def worker(batches, preview):
    module = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8))
    Trainer(module, [Preview(preview)]).fit(batches)
"""
    found = lint_source(source.replace("MODEL", "trainer.model"))
    assert [(f.kind, f.line, f.condition) for f in found] == [("branch", 23, "@local_rank_zero_only")], found
    assert found[0].collective == "trainer.model() (DDP forward)"
    assert lint_source(source.replace("MODEL", "pl_module")) == []


def test_a_new_iterator_over_a_dataloader_of_an_iterdatapipe_on_rank_zero_only_is_a_collective() -> None:
    """Modelled on round 37's RETURNN pair (``buggy_returnn_eval_loader_iter_rank0_new_group``, rwth-i6/returnn
    issue #1454): a ``DataLoader`` over an ``IterDataPipe`` makes a gloo ``new_group`` and broadcasts a seed at
    each new iterator; rank 0 alone iterates the dev loaders (held in a dict comprehension), so its group pairs
    with the others' next training iterator. Evaluating on every rank is quiet, and so is a plain list dataset."""
    source = """
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.datapipes.iter import IterableWrapper

class Engine:
    def __init__(self, train, dev_sets):
        self._train_dataloader = DataLoader(IterableWrapper(train), batch_size=None)
        self._eval_dataloaders = {name: DataLoader(IterableWrapper(d), batch_size=None) for name, d in dev_sets.items()}

    def train_epoch(self):
        for batch in self._train_dataloader:
            pass
        if dist.get_rank() == 0:
            self.eval_model()

    def eval_model(self):
        for name, loader in self._eval_dataloaders.items():
            for batch in loader:
                pass
"""
    found = lint_source(source)
    assert [(f.kind, f.line, f.condition_line) for f in found] == [("hidden-collective", 15, 14)], found
    assert found[0].collective == "self.eval_model -> iter(loader)"
    assert "each new iterator makes a gloo new_group and broadcasts a shared seed" in found[0].why
    assert lint_source(source.replace("        if dist.get_rank() == 0:\n            self", "        self")) == []
    assert lint_source(source.replace("IterableWrapper(d)", "list(d)")) == []


def test_a_main_process_first_context_manager_decorating_a_generator_function_is_generator_decorated() -> None:
    """Modelled on round 18's pair (``buggy_main_first_decorates_generator`` and
    ``correct_main_first_decorates_list_loader``): a ``@contextmanager`` "main process first" helper, whose
    barriers order the replicas after the main process, decorates a generator function; the decorator wraps only
    the call that creates the generator, so both barriers pass before anything is tokenised. The same decorator on
    a function that returns a list is quiet."""
    source = """
import contextlib
import torch
import torch.distributed as dist

@contextlib.contextmanager
def main_process_first(desc):
    is_main = dist.get_rank() == 0
    if not is_main:
        dist.barrier()
    try:
        yield
    finally:
        if is_main:
            dist.barrier()

@main_process_first("tokenizing")
def tokenized_records(raw, cache_path):
    if dist.get_rank() != 0:
        yield from torch.load(cache_path)
        return
    done = [r for r in raw]
    torch.save(done, cache_path)
    yield from done
"""
    [found] = lint_source(source)
    assert (found.kind, found.line) == ("generator-decorated", 17), found
    assert found.condition == "@main_process_first on a generator function"
    assert "wraps only the call `tokenized_records(...)`" in found.why
    assert found.fix.startswith("use `with main_process_first(...):`")
    as_list = source.replace(
        "        yield from torch.load(cache_path)\n        return\n", "        return torch.load(cache_path)\n"
    ).replace("    yield from done\n", "    return done\n")
    assert lint_source(as_list) == []


def test_a_barrier_of_the_same_group_orders_an_async_result_before_its_read():
    """review74c C1: work = all_reduce(t, async_op=True); dist.barrier(); t.tolist(): on gloo the barrier waits for
    all earlier work of its group (0 of 3 stale reads with it, 3 of 3 without); a barrier of another group does
    not count."""
    head = "import torch\nimport torch.distributed as dist\n\n\ndef f(g):\n    t = torch.ones(4)\n"
    call = "    work = dist.all_reduce(t, async_op=True)\n"
    ordered = head + call + "    dist.barrier()\n    return t.tolist()\n"
    other = head + call + "    dist.barrier(group=g)\n    return t.tolist()\n"
    plain = head + call + "    return t.tolist()\n"
    assert not [x for x in lint_source(ordered) if x.kind == "read-before-wait"]
    assert [x.kind for x in lint_source(other) if x.kind == "read-before-wait"] == ["read-before-wait"]
    assert [x.kind for x in lint_source(plain) if x.kind == "read-before-wait"] == ["read-before-wait"]


def test_a_branch_around_an_empty_all_reduce_says_it_returns_at_once():
    """review74c C2: `if rank == 0: dist.all_reduce(torch.empty(0))` returned at once on gloo and rank 0
    finished; the finding says so, and a non-empty one keeps the plain text."""
    source = (
        "import torch\nimport torch.distributed as dist\n\n\ndef f():\n"
        "    if dist.get_rank() == 0:\n        dist.all_reduce(torch.empty(0))\n"
        "    if dist.get_rank() == 1:\n        dist.all_reduce(torch.ones(2))\n"
    )
    found = {x.line: x.why for x in lint_source(source) if x.kind == "branch"}
    assert "returns at once on gloo" in found[7], found
    assert "returns at once" not in found[9], found


def test_different_roots_text_does_not_say_no_rank_gets_a_roots_data():
    """review74c M1: with roots 0 and 3 on 6 ranks, ranks 2 and 5 got exactly their root's data."""
    source = (
        "import torch\nimport torch.distributed as dist\n\n\ndef f():\n    rank = dist.get_rank()\n"
        "    t = torch.ones(2)\n    dist.broadcast(t, src=rank // 3 * 3)\n"
    )
    (finding,) = [x for x in lint_source(source) if x.kind == "different-roots"]
    assert "no rank gets" not in finding.why and "no single root's data" in finding.why, finding.why


def test_a_subgroup_barrier_under_a_rank_test_is_fixed_for_the_groups_members():
    """review75c M1: `if rank == 0: dist.barrier(group=group)` on a group of ranks 0 and 1 was told "so every rank
    calls it", which made ranks 2 and 3 call it as non-members (flagged next); the fix names the group's members."""
    source = (
        "import torch.distributed as dist\n\n\ndef f():\n    group = dist.new_group([0, 1])\n"
        "    if dist.get_rank() == 0:\n        dist.barrier(group=group)\n"
    )
    (finding,) = [x for x in lint_source(source) if x.kind == "branch"]
    assert "every member of `group`" in finding.fix and "every rank calls it" not in finding.fix, finding.fix


def test_crossed_subgroups_say_their_members_stay_not_every_rank():
    """review75c M2: ranks outside both groups returned at once; only the members hung."""
    source = (
        "import torch.distributed as dist\n\n\ndef f():\n    a = dist.new_group([0, 1])\n    b = dist.new_group([0, 1])\n"
        "    if dist.get_rank() == 0:\n        dist.barrier(group=a)\n        dist.barrier(group=b)\n"
        "    else:\n        dist.barrier(group=b)\n        dist.barrier(group=a)\n"
    )
    whys = [x.why for x in lint_source(source) if "no call returns" in x.why]
    assert whys and all("every member of the groups stays" in w for w in whys), whys


_LEARNER_HEAD = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def shard(rows, rank, world):
    per, extra = divmod(rows.shape[0], world)
    start = rank * per + min(rank, extra)
    return rows[start:start + per + (1 if rank < extra else 0)]


def minibatches(batch):
    return [batch[i:i + 2] for i in range(0, batch.shape[0] - 1, 2)]


def agreed(local):
    n = torch.tensor([local])
    dist.all_reduce(n, op=dist.ReduceOp.MIN)
    return int(n.item())
"""

_LEARNER_TAIL = """
def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    module = DDP(torch.nn.Linear(3, 2))
    optimizer = torch.optim.SGD(module.parameters(), lr=0.05)
    for rows in (8, 3):
        stats = update(module, optimizer, shard(torch.randn(rows, 3), rank, world))
    dist.barrier()
"""


def test_a_helper_handed_the_ranks_own_uneven_share_skips_its_ddp_steps_on_an_empty_one():
    """round40 buggy_ray_rllib_learner_skips_empty_batch (ray PR #66030): `update(module, optimizer, shard(...))`
    hands each Learner its own share of 3 rows (2 and 1); `update` returns early `if not mbs` and skips the DDP
    backward the other Learner makes. Reported at the call, under the callee's test; the twin that all-reduces the
    minibatch count (MIN) first is quiet, and so is a test on the share's content rather than its length."""
    skipping = (
        "\n\ndef update(module, optimizer, batch):\n    mbs = minibatches(batch)\n    if not mbs:\n        return {}\n"
        "    for mb in mbs:\n        optimizer.zero_grad()\n        module(mb).pow(2).mean().backward()\n"
        "        optimizer.step()\n    return {}\n"
    )
    found = [x for x in lint_source(_LEARNER_HEAD + skipping + _LEARNER_TAIL) if x.kind == "hidden-collective"]
    assert [(x.line, x.condition) for x in found] == [(38, "mbs")], found
    assert "own share of the data" in found[0].why and "update()" in found[0].why, found[0].why
    assert "ReduceOp.MIN" in found[0].fix, found[0].fix
    agreeing = (
        "\n\ndef update(module, optimizer, batch):\n    mbs = minibatches(batch)\n    n = agreed(len(mbs))\n"
        "    if n == 0:\n        return {}\n    for mb in mbs[:n]:\n        optimizer.zero_grad()\n"
        "        module(mb).pow(2).mean().backward()\n        optimizer.step()\n    return {}\n"
    )
    assert lint_source(_LEARNER_HEAD + agreeing + _LEARNER_TAIL) == []
    content = skipping.replace("if not mbs:", "if batch.sum() > 1e9:").replace("    mbs = minibatches(batch)\n", "")
    content = content.replace("for mb in mbs:", "for mb in [batch]:")
    assert lint_source(_LEARNER_HEAD + content + _LEARNER_TAIL) == []


# --------------------------------------------------------------------------- lintgap30: gaps reviewers found


def _kinds(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.kind) for f in lint_source(textwrap.dedent(source))]


def test_group_arguments_that_differ_between_ranks() -> None:
    """Run on 3 ranks, rank 2 waited in new_group and ranks 0 and 1 timed out; lint said nothing."""
    buggy = """\
        import torch.distributed as dist

        def work():
            ranks = [0, 1] if dist.get_rank() < 2 else [0, 1, 2]
            g = dist.new_group(ranks)
            dist.barrier()
        """
    assert _kinds(buggy) == [(5, "group-arguments")]
    pairs = """\
        import torch.distributed as dist

        def work():
            rank = dist.get_rank()
            g = dist.new_group([rank // 2 * 2, rank // 2 * 2 + 1])
            by_enumeration = dist.new_subgroups_by_enumeration([[0, 1], [rank]])
        """
    assert _kinds(pairs) == [(5, "group-arguments"), (6, "group-arguments")]
    correct = """\
        import torch.distributed as dist

        def work():
            rank = dist.get_rank()
            groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
            mine = groups[rank // 2]
            by_local_rank = [list(range(local, 4, 2)) for local in range(2)]
            inter, _ = dist.new_subgroups_by_enumeration(ranks_per_subgroup_list=by_local_rank)
            local = dist.new_group([rank // 2 * 2, rank // 2 * 2 + 1], use_local_synchronization=True)
            dist.barrier(group=mine)
        """
    assert _kinds(correct) == []


def test_a_barrier_before_the_write_orders_nothing() -> None:
    """rank 0: barrier, then write; the others: barrier, then read. Run on 2 ranks with the write slowed by 0.5 s,
    rank 1 saw no file."""
    buggy = """\
        import os
        import torch.distributed as dist

        def work(path):
            if dist.get_rank() == 0:
                dist.barrier()
                with open(path, "w") as f:
                    f.write("ok")
            else:
                dist.barrier()
                return os.path.exists(path)
        """
    (found,) = lint_source(textwrap.dedent(buggy))
    assert (found.line, found.kind, found.condition_line) == (11, "file-race", 5)
    assert "after their first collective (`dist.barrier` at line 6)" in found.why
    correct = buggy.replace(
        '                dist.barrier()\n                with open(path, "w") as f:\n                    f.write("ok")\n',
        '                with open(path, "w") as f:\n                    f.write("ok")\n                dist.barrier()\n',
    )
    assert correct != buggy and _kinds(correct) == []
    tail = """\
        import os
        import torch
        import torch.distributed as dist

        def work(folder):
            path = os.path.join(folder, "w.pt")
            if dist.get_rank() == 0:
                dist.barrier()
                torch.save(torch.ones(2), path)
            else:
                dist.barrier()
            return torch.load(path)
        """
    assert _kinds(tail) == [(12, "file-race")]
    made = """\
        import os
        import torch.distributed as dist

        def work(out):
            if dist.get_rank() == 0:
                dist.barrier()
                os.makedirs(out)
            else:
                dist.barrier()
                return os.listdir(out)
        """
    assert _kinds(made) == [(10, "file-race")]
    assert _kinds(made.replace("                dist.barrier()\n                os.makedirs(out)\n",
                               "                os.makedirs(out)\n                dist.barrier()\n")) == []  # fmt: skip


def test_collectives_in_another_order_on_some_ranks() -> None:
    """Run on 2 ranks: rank 0 returned (21.0, 12.0), rank 1 (12.0, 21.0): a and b mixed, no error."""
    buggy = """\
        import torch
        import torch.distributed as dist

        def work():
            rank = dist.get_rank()
            a = torch.tensor([1.0 + rank])
            b = torch.tensor([10.0 * (rank + 1)])
            if rank == 0:
                dist.all_reduce(a)
                dist.all_reduce(b)
            else:
                dist.all_reduce(b)
                dist.all_reduce(a)
            return a.item(), b.item()
        """
    (found,) = lint_source(textwrap.dedent(buggy))
    assert (found.line, found.kind, found.condition_line) == (12, "collective-order", 8)
    correct = buggy.replace("dist.all_reduce(b)\n                dist.all_reduce(a)",
                            "dist.all_reduce(a)\n                dist.all_reduce(b)")  # fmt: skip
    assert correct != buggy and _kinds(correct) == []
    roles = """\
        import torch
        import torch.distributed as dist

        def work(data, buf):
            if dist.get_rank() == 0:
                dist.broadcast(data, 0)
            else:
                dist.broadcast(buf, 0)
        """
    assert _kinds(roles) == []  # the same call with each side's own tensor: no order to swap


def test_store_keys_nobody_sets_and_store_wait_cycles() -> None:
    """Run on 2 ranks: both ranks waited in store.get("ready") (set nowhere) until the deadline; the cycle
    (each rank waits for the key the other sets after its own wait) did the same; the twins finished."""
    unset = """\
        import torch.distributed as dist

        def work(store):
            if dist.get_rank() == 1:
                store.set("done", "1")
            return store.get("ready")
        """
    assert _kinds(unset) == [(6, "store-key")]
    assert _kinds(unset.replace('"done"', '"ready"')) == []
    assert _kinds(unset.replace('store.set("done", "1")', 'store.set(f"rea{x}", "1")')) == []  # an f-string can make it
    cycle = """\
        import torch.distributed as dist

        def work(store):
            if dist.get_rank() == 0:
                store.wait(["from1"])
                store.set("from0", "x")
            else:
                store.wait(["from0"])
                store.set("from1", "y")
        """
    assert _kinds(cycle) == [(5, "store-key"), (8, "store-key")]
    assert "a store wait cycle" in lint_source(textwrap.dedent(cycle))[0].why
    fixed = cycle.replace('store.wait(["from1"])\n                store.set("from0", "x")',
                          'store.set("from0", "x")\n                store.wait(["from1"])')  # fmt: skip
    fixed = fixed.replace('store.wait(["from0"])\n                store.set("from1", "y")',
                          'store.set("from1", "y")\n                store.wait(["from0"])')  # fmt: skip
    assert fixed != cycle and _kinds(fixed) == []


def test_point_to_point_with_no_matching_peer() -> None:
    """Run on 2 ranks: rank 1's recv(src=0) failed 'Connection closed by peer' when rank 0 (which never sends)
    returned; a send to rank 1 with no recv there failed the same way; the paired twin returned 5.0 on both."""
    recv_only = """\
        import torch
        import torch.distributed as dist

        def work():
            t = torch.zeros(1)
            if dist.get_rank() != 0:
                dist.recv(t, src=0)
            return t.item()
        """
    (found,) = lint_source(textwrap.dedent(recv_only))
    assert (found.line, found.kind) == (7, "p2p-unmatched")
    assert "rank 1 waits here for a message from rank 0" in found.why
    send_only = """\
        import torch
        import torch.distributed as dist

        def work():
            t = torch.ones(1)
            if dist.get_rank() == 0:
                dist.send(t, dst=1)
            return t.item()
        """
    assert _kinds(send_only) == [(7, "p2p-unmatched")]
    paired = """\
        import torch
        import torch.distributed as dist

        def work():
            t = torch.zeros(1)
            rank = dist.get_rank()
            if rank == 0:
                dist.send(t, dst=1)
            else:
                dist.recv(t, src=0)
            return t.item()
        """
    assert _kinds(paired) == []
    one_side = """\
        import torch.distributed as dist

        def send_forward(x):
            dist.send(x, dst=1)

        def recv_forward(buf):
            dist.recv(buf, src=0)

        def stage(rank, x, buf):
            if rank == 0:
                send_forward(x)
            else:
                recv_forward(buf)
        """
    assert _kinds(one_side) == []  # each helper is one side; the other is in another function


def test_point_to_point_handles_kept_but_never_waited() -> None:
    """Run on 2 ranks: `req = dist.irecv(t, src=0)` then `t.item()` before `req.wait()` returned 0.0 where the
    message held 7.0; waiting first returned 7.0."""
    kept = """\
        import torch
        import torch.distributed as dist

        def work(t):
            if dist.get_rank() == 0:
                req = dist.isend(t, dst=1)
            else:
                dist.recv(t, src=0)
            return t
        """
    assert _kinds(kept) == [(6, "unwaited-async")]
    assert (
        _kinds(kept.replace("req = dist.isend(t, dst=1)", "req = dist.isend(t, dst=1)\n                req.wait()"))
        == []
    )
    listed = """\
        import torch.distributed as dist

        def work(t, reqs):
            reqs.append(dist.irecv(t, src=0))
            return t
        """
    assert _kinds(listed) == [(4, "unwaited-async")]
    early = """\
        import torch
        import torch.distributed as dist

        def work():
            t = torch.zeros(1)
            if dist.get_rank() == 0:
                dist.send(torch.full((1,), 7.0), dst=1)
                return 0.0
            req = dist.irecv(t, src=0)
            seen = t.item()
            req.wait()
            return seen
        """
    assert _kinds(early) == [(9, "read-before-wait")]
    waited = early.replace(
        "            seen = t.item()\n            req.wait()\n", "            req.wait()\n            seen = t.item()\n"
    )
    assert waited != early and _kinds(waited) == []


def test_collective_in_a_child_process() -> None:
    """Run on 2 ranks: with the child's all_reduce (fork, or multiprocessing.Process) every rank waited until the
    deadline; the child that only computes finished (2.0 on both)."""
    forked = """\
        import os
        import torch
        import torch.distributed as dist

        def work():
            t = torch.ones(1)
            pid = os.fork()
            if pid == 0:
                dist.all_reduce(t)
                os._exit(0)
            os.waitpid(pid, 0)
            dist.all_reduce(t)
            return t.item()
        """
    assert _kinds(forked) == [(9, "forked-collective")]
    assert (
        _kinds(
            forked.replace(
                "                dist.all_reduce(t)\n                os._exit",
                "                t.mul_(2)\n                os._exit",
            )
        )
        == []
    )
    process = """\
        import multiprocessing
        import torch
        import torch.distributed as dist

        def child():
            dist.all_reduce(torch.ones(1))

        def work():
            p = multiprocessing.Process(target=child)
            p.start()
            p.join()
        """
    assert _kinds(process) == [(9, "forked-collective")]
    launcher = """\
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp

        def init_process(rank, size):
            dist.init_process_group("gloo", rank=rank, world_size=size)
            dist.all_reduce(torch.ones(1))

        if __name__ == "__main__":
            procs = [mp.Process(target=init_process, args=(r, 2)) for r in range(2)]
        """
    assert _kinds(launcher) == []  # each child joins a group of its own: a launcher


# -- review79l: false alarms and misses of lint's findings on a script's top level


def test_a_top_level_subgroup_collective_under_its_membership_test_is_quiet() -> None:
    """review79l C1: `g = new_group([0, 1])`, `if rank < 2: all_reduce(t, group=g)` at a script's top level ran on 4
    ranks (4 finished) but was a `branch`: the group check ran only inside functions."""
    source = """
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
g = dist.new_group([0, 1])
if rank < 2:
    t = torch.ones(1)
    dist.all_reduce(t, group=g)
dist.barrier()
"""
    assert lint_source(source) == []
    assert (
        lint_source(source.replace("new_group([0, 1])", "new_group([2, 3])").replace("rank < 2", "rank in (2, 3)"))
        == []
    )
    [finding] = lint_source(source.replace("rank < 2", "rank == 0"))  # rank 1 is a member and skips it
    assert (finding.line, finding.kind) == (10, "branch")


def test_a_file_of_each_rank_s_own_made_and_read_by_it_is_no_race() -> None:
    """review79l C2: a per-rank cache made when missing and read back on the same rank ran on 2 ranks with no race
    but was a `file-race` ("other ranks read it here"): no other rank reads a path that holds the rank."""
    source = """
import os
import torch
import torch.distributed as dist

def main():
    rank = dist.get_rank()
    path = f"/tmp/cache{rank}.pt"
    if not os.path.exists(path):
        torch.save(torch.ones(2), path)
    x = torch.load(path)
    dist.barrier()
"""
    assert lint_source(source) == []
    shared = source.replace('f"/tmp/cache{rank}.pt"', '"/tmp/cache.pt"').replace(
        "if not os.path.exists(path):", "if rank == 0:"
    )
    [finding] = lint_source(shared)
    assert (finding.line, finding.kind) == (11, "file-race")


def test_a_property_s_fix_reads_it_rather_than_calls_it() -> None:
    """review79l C3: the fix said "call `m.total()`", which calls the tensor the property returns (TypeError)."""
    source = """
import torch
import torch.distributed as dist

class M:
    @property
    def total(self):
        t = torch.ones(1)
        dist.all_reduce(t)
        return t

    def summed(self):
        return self.total

def main():
    m = M()
    if dist.get_rank() == 0:
        print(m.total)
"""
    [finding] = lint_source(source)
    assert finding.kind == "hidden-collective"
    assert "`m.total` reaches dist.all_reduce" in finding.why and "m.total()" not in finding.why
    assert finding.fix.startswith("read `m.total` on every rank"), finding.fix
    [called] = lint_source(source.replace("print(m.total)", "print(m.summed())"))
    assert called.fix.startswith("call `m.summed()` on every rank"), called.fix


def test_top_level_mkdir_and_unmatched_recv_are_reported_as_in_a_function() -> None:
    """review79l M1: every-rank-mkdir and p2p-unmatched looked only at functions: a script's top-level
    `os.makedirs(path)` (FileExistsError on 2 ranks) and `if rank == 1: recv(t, src=0)` were "No problems found"."""
    mkdir = """
import os
import torch.distributed as dist

dist.init_process_group("gloo")
os.makedirs("/tmp/out19")
dist.barrier()
"""
    [finding] = lint_source(mkdir)
    assert (finding.line, finding.kind) == (6, "every-rank-mkdir")
    assert "every rank runs the script's top level" in finding.why
    assert lint_source(mkdir.replace('"/tmp/out19")', '"/tmp/out19", exist_ok=True)')) == []
    assert lint_source(mkdir.replace('dist.init_process_group("gloo")\n', "")) == []  # no rank runs it: a launcher
    recv = """
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.zeros(1)
if rank == 1:
    dist.recv(t, src=0)
"""
    [finding] = lint_source(recv)
    assert (finding.line, finding.kind) == (9, "p2p-unmatched")
    assert "rank 0's way through the script's top level" in finding.why
    assert lint_source(recv + "elif rank == 0:\n    dist.send(t, dst=1)\n") == []


def test_a_top_level_group_rank_root_is_reported() -> None:
    """review79l M1: at a script's top level the broadcast's group-local src=0 (ranks 2 and 3 raised "Global rank 0
    is not part of group") was hidden behind a false `branch` (C1); group_src=0 is the fix."""
    source = """
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
g = dist.new_group([2, 3])
if rank in (2, 3):
    t = torch.tensor([float(rank)])
    if dist.get_rank(g) == 0:
        t += 100
    dist.broadcast(t, src=0, group=g)
"""
    [finding] = lint_source(source)
    assert (finding.line, finding.kind) == (12, "group-rank")
    assert "the script's top level tests `dist.get_rank(g) == 0`" in finding.why
    assert lint_source(source.replace("src=0, group", "group_src=0, group")) == []


def test_group_arguments_describes_the_mechanism_not_one_run() -> None:
    """review79l D1: the why quoted run outcomes ("rank 2 waited in new_group until the deadline and ranks 0 and 1
    timed out") that did not reproduce: 4 runs each of those programs on 3 and 4 ranks ended with a rank stuck in
    new_group, a 'Connection reset by peer', or every rank finished, varying from run to run."""
    source = """
import torch
import torch.distributed as dist

def main():
    rank = dist.get_rank()
    ranks = [0, 1] if rank < 2 else [0, 1, 2]
    g = dist.new_group(ranks)
    dist.barrier()
"""
    [finding] = lint_source(source)
    assert (finding.line, finding.kind) == (8, "group-arguments")
    assert "waited in new_group" not in finding.why and "timed out" not in finding.why
    assert "by how many groups the rank made before it, not by its members" in finding.why
    assert "changes from run to run" in finding.why
    assert lint_source(source.replace("[0, 1] if rank < 2 else [0, 1, 2]", "[0, 1, 2]")) == []


def test_an_attribute_a_method_last_sets_from_an_all_reduce_is_settled_for_its_callers() -> None:
    """round41 sleap-nn (talmolab/sleap-nn PR #471): rank 0 sets `trainer.should_stop` from its socket; a
    barrier after it carries no value (buggy: rank 0 leaves the loop, rank 1 waits in the next backward), an
    all_reduce of the flag whose result is written back last settles it on every rank (correct)."""
    buggy = """\
        import torch
        import torch.distributed as dist

        class Trainer:
            def __init__(self):
                self.is_global_zero = dist.get_rank() == 0
                self.should_stop = False

        class Controller:
            def on_train_batch_end(self, trainer, step):
                if trainer.is_global_zero and step == 2:
                    trainer.should_stop = True
                dist.barrier()

        def fit(trainer, controller):
            for step in range(6):
                dist.all_reduce(torch.ones(1))
                controller.on_train_batch_end(trainer, step)
                if trainer.should_stop:
                    break
            dist.barrier()
        """
    assert (17, "early-exit") in _kinds(buggy)
    settled = buggy.replace(
        "                dist.barrier()\n\n        def fit",
        "                decision = torch.tensor([int(trainer.should_stop)])\n"
        "                dist.all_reduce(decision, op=dist.ReduceOp.MAX)\n"
        "                trainer.should_stop = bool(decision.item())\n\n        def fit",
    )
    assert settled != buggy and _kinds(settled) == []
    # written back under a test, or with a return before it, some ranks keep their own value
    guarded = settled.replace(
        "                trainer.should_stop = bool(decision.item())\n",
        "                if step > 0:\n                    trainer.should_stop = bool(decision.item())\n",
    )
    assert guarded != settled and "early-exit" in {kind for _, kind in _kinds(guarded)}
    returned = settled.replace(
        "                decision = torch.tensor",
        "                if trainer.should_stop:\n                    return\n                decision = torch.tensor",
    )
    assert returned != settled and "early-exit" in {kind for _, kind in _kinds(returned)}


def test_a_loop_over_a_generator_method_whose_stop_rank_zero_broadcast_runs_as_often_on_every_rank() -> None:
    """round41 gpt-oss (openai/gpt-oss PR #285): the generator object holds the rank's weight shard and its own
    sampler; each rank sampling its own token stops at a different step (buggy), the token rank 0 samples and
    broadcasts stops every rank at the same step (correct)."""
    buggy = """\
        import torch
        import torch.distributed as dist

        class TokenGenerator:
            def __init__(self, rank):
                self.weight = torch.randn(4, 4)[rank::2]
                self.rng = torch.Generator().manual_seed(1000 + rank)

            def forward(self, tokens):
                t = torch.ones(4)
                dist.all_reduce(t)
                return t

            def generate(self, stop_tokens, max_tokens=12):
                done = 0
                while done < max_tokens:
                    probs = torch.softmax(self.forward(done), dim=-1)
                    token = int(torch.multinomial(probs, 1, generator=self.rng).item())
                    done += 1
                    yield token
                    if token in stop_tokens:
                        break

        def worker():
            generator = TokenGenerator(dist.get_rank())
            for token in generator.generate(stop_tokens=[3]):
                print(token)
        """
    assert "hidden-collective" in {kind for _, kind in _kinds(buggy)}
    correct = buggy.replace(
        "                    token = int(torch.multinomial(probs, 1, generator=self.rng).item())\n",
        "                    chosen = torch.zeros(1, dtype=torch.int64)\n"
        "                    if dist.get_rank() == 0:\n"
        "                        chosen[0] = torch.multinomial(probs, 1, generator=self.rng).item()\n"
        "                    dist.broadcast(chosen, src=0)\n"
        "                    token = int(chosen.item())\n",
    )
    assert correct != buggy and _kinds(correct) == []
    # the number of tokens handed in from the rank: the loop's trips differ again
    ranked = correct.replace("generator.generate(stop_tokens=[3])", "generator.generate([3], dist.get_rank() + 4)")
    assert ranked != correct and _kinds(ranked) == [(30, "hidden-collective")]
    # a yield under a test on the rank's own sample
    chosen = correct.replace(
        "                    yield token\n", "                    if token % 2:\n                        yield token\n"
    )
    assert chosen != correct and _kinds(chosen) == [(31, "hidden-collective")]


def test_a_handler_that_goes_on_only_after_an_error_raised_past_every_collective_skips_none() -> None:
    """round41 DeepForest (weecology/DeepForest PR #1426): gating the metric's all-gathering compute() on the
    rank's own labels skips it on a rank with an empty shard (buggy); calling it on every rank and going on only
    after its own "no samples" error, raised after both all-gathers, skips nothing (correct)."""
    buggy = """\
        import torch
        import torch.distributed as dist

        class IoUMetric:
            def __init__(self):
                self.labels = []
                self.ious = []

            def compute(self):
                local = torch.tensor(self.ious, dtype=torch.float64)
                size = torch.tensor([local.numel()])
                sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
                dist.all_gather(sizes, size)
                if int(sum(s.item() for s in sizes)) == 0:
                    raise ValueError("IoU: no samples to compute")
                return {"iou": local.mean().item()}

            def update(self, pred, targets):
                for target in targets:
                    self.labels.append(0)
                    self.ious.append(pred * target)

        class Module:
            def __init__(self):
                self.iou_metric = IoUMetric()

            def validation_step(self, pred, targets):
                if targets:
                    self.iou_metric.update(pred, targets)

            def epoch_metrics(self):
                metrics = {}
                if len(self.iou_metric.labels) > 0:
                    metrics.update(self.iou_metric.compute())
                dist.barrier()
                return metrics

        IMAGES = [(1.0, [1.0]), (0.5, []), (0.2, [0.3]), (0.1, [])]

        def worker():
            module = Module()
            for index in range(dist.get_rank(), len(IMAGES), dist.get_world_size()):
                pred, targets = IMAGES[index]
                module.validation_step(pred, targets)
            return module.epoch_metrics()
        """
    assert _kinds(buggy) == [(34, "hidden-collective"), (35, "early-exit")]
    correct = buggy.replace(
        "                if len(self.iou_metric.labels) > 0:\n                    metrics.update(self.iou_metric.compute())\n",
        "                try:\n                    metrics.update(self.iou_metric.compute())\n"
        "                except ValueError as error:\n"
        '                    if "no samples" not in str(error):\n                        raise\n',
    )
    assert correct != buggy and _kinds(correct) == []
    # the text raised before the all-gather: a rank with no values of its own skips it
    early = correct.replace(
        "                local = torch.tensor(self.ious, dtype=torch.float64)\n",
        "                if not self.ious:\n                    raise ValueError('no samples here')\n"
        "                local = torch.tensor(self.ious, dtype=torch.float64)\n",
    )
    assert early != correct and _kinds(early) == [(36, "hidden-collective")]
    # any ValueError goes on: the rank's own work in compute() may raise before the all-gather
    broad = correct.replace(
        '                    if "no samples" not in str(error):\n                        raise\n',
        "                    pass\n",
    )
    assert broad != correct and _kinds(broad) == [(34, "hidden-collective")]


def test_a_helper_whose_own_call_hands_a_constant_that_turns_its_barriers_off_is_quiet_on_one_rank() -> None:
    """round31 transformers run_glue (huggingface/transformers PR #1081): evaluation on the master process only
    loads the dev features through the cache helper; with barriers under `local_rank == 0` alone it waits for a
    rank that has gone (buggy), with `and not evaluate` and `evaluate=True` handed in, it makes none (correct)."""
    buggy = """\
        import torch
        import torch.distributed as dist

        class Args:
            def __init__(self):
                self.local_rank = dist.get_rank()

        def load_and_cache_examples(args, evaluate=False):
            if args.local_rank not in [-1, 0]:
                dist.barrier()
            features = torch.zeros(4)
            if args.local_rank == 0:
                dist.barrier()
            return features

        def evaluate(args):
            return load_and_cache_examples(args, evaluate=True).sum()

        def worker():
            args = Args()
            train = load_and_cache_examples(args)
            if args.local_rank in [-1, 0]:
                print(evaluate(args))
        """
    assert _kinds(buggy) == [(23, "hidden-collective")]
    correct = buggy.replace(
        "            if args.local_rank not in [-1, 0]:\n",
        "            if args.local_rank not in [-1, 0] and not evaluate:\n",
    ).replace("            if args.local_rank == 0:\n", "            if args.local_rank == 0 and not evaluate:\n")
    assert correct != buggy and _kinds(correct) == []
    # the helper handing on what its own caller passed: no constant, the barriers stay
    handed = correct.replace("def evaluate(args):", "def evaluate(args, evaluate=True):").replace(
        "load_and_cache_examples(args, evaluate=True).sum()", "load_and_cache_examples(args, evaluate).sum()"
    )
    assert handed != correct and _kinds(handed) == [(23, "hidden-collective")]


def test_a_method_called_right_after_the_one_that_broadcasts_the_state_finds_it_settled() -> None:
    """round27 mmrazor NAS search resumed on rank 0 (correct_nas_resumed_pool_single_object): `_resume()` loads the
    candidate pool on rank 0 only; `sample_candidates()` broadcasts it as one object and ends with
    `self.candidates = box[0]`, so `update_candidates_scores()`, called right after it, loops as often on every
    rank. Called without the broadcast before it, or named as a hook, the loop is reported."""
    correct = """\
        import pickle
        import torch
        import torch.distributed as dist

        class Search:
            def __init__(self, resume_from):
                self.resume_from = resume_from
                self.candidates = []

            def run(self):
                if self.resume_from:
                    self._resume()
                for epoch in range(2):
                    self.run_epoch()

            def _resume(self):
                if dist.get_rank() == 0:
                    with open(self.resume_from, "rb") as f:
                        self.candidates = pickle.load(f)

            def run_epoch(self):
                self.sample_candidates()
                self.update_candidates_scores()

            def sample_candidates(self):
                box = [self.candidates if dist.get_rank() == 0 else None]
                dist.broadcast_object_list(box, src=0)
                self.candidates = box[0]

            def update_candidates_scores(self):
                for i, subnet in enumerate(self.candidates):
                    t = torch.ones(1)
                    dist.all_reduce(t)
        """
    assert _kinds(correct) == []
    unsettled = correct.replace("                self.sample_candidates()\n", "                print(epoch)\n")
    assert unsettled != correct and _kinds(unsettled) == [(33, "rank-dependent-loop")]
    hooked = correct.replace(
        "                self.update_candidates_scores()\n",
        "                self.update_candidates_scores()\n                hooks.append(self.update_candidates_scores)\n",
    )
    assert hooked != correct and _kinds(hooked) == [(34, "rank-dependent-loop")]


def test_a_flag_a_bound_method_registered_as_a_signal_handler_sets_differs_between_ranks() -> None:
    """round40 pocket-tts (buggy_pockettts_sigterm_stop_flag_rank_local): `signal.signal(SIGTERM, self._handler)`
    sets `self.requested` on the one process the signal reaches; leaving the loop on it leaves the others in
    DDP's next all_reduce (buggy). Leaving on the flag all-reduced with MAX (correct) is quiet."""
    buggy = """\
        import signal
        import torch
        import torch.distributed as dist

        class StopRequest:
            def __init__(self):
                self.requested = False
                signal.signal(signal.SIGTERM, self._handler)

            def _handler(self, signum, frame):
                self.requested = True

            def agreed(self):
                flag = torch.tensor([int(self.requested)])
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                return bool(flag.item())

        def train():
            stop = StopRequest()
            for step in range(6):
                dist.all_reduce(torch.ones(1))
                if stop.requested:
                    return step
        """
    assert _kinds(buggy) == [(21, "early-exit")]
    correct = buggy.replace("                if stop.requested:\n", "                if stop.agreed():\n")
    assert correct != buggy and _kinds(correct) == []


def test_a_store_based_barrier_with_a_constant_key_in_code_that_runs_twice_waits_only_once() -> None:
    """round41 checkpoint-engine (ParameterServer.store_based_barrier, PR #107) and round14's store barrier around
    data preparation: a constant `group_name`/`key_prefix` in a barrier that runs again (a loop, two calls) lets
    every rank through at once from the second use on (torch: "the barrier can be used once per unique
    key_prefix"); a key with a generation counter or the split in it waits every time."""
    looped = """\
        from datetime import timedelta
        import torch.distributed as dist
        from torch.distributed import distributed_c10d

        class ParameterServer:
            def __init__(self, store):
                self._store = store

            def store_based_barrier(self):
                distributed_c10d._store_based_barrier(
                    rank=dist.get_rank(),
                    store=self._store,
                    group_name="parameter_server_barrier",
                    rendezvous_count=dist.get_world_size(),
                    timeout=timedelta(seconds=15),
                )

            def update(self, version):
                self.store_based_barrier()

        def worker(store):
            ps = ParameterServer(store)
            for version in (1, 2):
                ps.update(version)
        """
    [finding] = lint_source(textwrap.dedent(looped))
    # review87l M2: the header is at the call it names (line 10); the key's line is the condition's
    assert (finding.line, finding.kind, finding.condition_line) == (10, "store-key", 13)
    assert "called in a loop, at line 24" in finding.why and "once per unique key_prefix" in finding.why
    counted = looped.replace(
        '                    group_name="parameter_server_barrier",\n',
        '                    group_name=f"parameter_server_barrier-{self._count}",\n',
    ).replace(
        "                self._store = store\n",
        "                self._store = store\n                self._count = 0\n",
    )
    assert counted != looped and _kinds(counted) == []
    once = looped.replace(
        "            for version in (1, 2):\n                ps.update(version)\n", "            ps.update(1)\n"
    )
    assert once != looped and _kinds(once) == []
    twice = """\
        import torch.distributed as dist
        from torch.distributed.elastic.utils import store as store_util

        def wait_for_everyone():
            store = dist.distributed_c10d._get_default_store()
            store_util.barrier(store, dist.get_world_size(), key_prefix="prepare_done", barrier_timeout=300)

        def prepare_split(name):
            wait_for_everyone()
            return name

        def worker():
            train = prepare_split("train")
            valid = prepare_split("valid")
        """
    [finding] = lint_source(textwrap.dedent(twice))
    assert (finding.line, finding.kind) == (6, "store-key") and "called at lines 13, 14" in finding.why


# -- review81l: what the findings say is what runs


def _src(text: str) -> list[Finding]:
    return lint_source(textwrap.dedent(text))


def test_review81l_c1_fork_child_collective_is_queued_and_never_runs() -> None:
    buggy = """\
        import os
        import torch
        import torch.distributed as dist

        def main():
            dist.init_process_group("gloo")
            pid = os.fork()
            if pid == 0:
                dist.all_reduce(torch.ones(1))
                os._exit(0)
            os.waitpid(pid, 0)
        """
    [finding] = _src(buggy)
    assert finding.kind == "forked-collective"
    assert "queued and never runs" in finding.why and "on the wire" not in finding.why
    fixed = buggy.replace("                dist.all_reduce(torch.ones(1))\n", "                print(1)\n")
    assert fixed != buggy and _src(fixed) == []


def test_review81l_c2_process_child_collective_is_queued_and_never_runs() -> None:
    buggy = """\
        import multiprocessing as mp
        import torch.distributed as dist

        def child():
            dist.barrier()

        def main():
            dist.init_process_group("gloo")
            p = mp.Process(target=child)
            p.start()
            p.join()
        """
    [finding] = _src(buggy)
    assert finding.kind == "forked-collective"
    assert "queued and never runs" in finding.why and "on the wire" not in finding.why
    fixed = buggy.replace("            dist.barrier()\n", "            print(1)\n")
    assert fixed != buggy and _src(fixed) == []


def test_review81l_c3_local_synchronization_group_made_by_its_members_only() -> None:
    correct = """\
        import torch
        import torch.distributed as dist

        def main():
            dist.init_process_group("gloo")
            rank = dist.get_rank()
            t = torch.ones(1)
            if rank in (0, 1):
                g = dist.new_group([0, 1], use_local_synchronization=True)
                dist.all_reduce(t, group=g)
        """
    assert _src(correct) == []
    buggy = correct.replace("if rank in (0, 1):", "if rank == 0:")
    [finding] = _src(buggy)
    assert finding.kind == "branch" and "use_local_synchronization=True only the group's members" in finding.why
    assert "numbers the groups" not in finding.why
    counted = correct.replace(", use_local_synchronization=True", "")
    [finding] = _src(counted)
    assert "numbers the groups" in finding.why


def test_review81l_m1_dtype_mismatch_names_the_dtypes_the_code_makes() -> None:
    buggy = """\
        import numpy as np
        import torch
        import torch.distributed as dist

        def main():
            rank = dist.get_rank()
            x = np.float32(1.5) if rank == 0 else np.float64(2.5)
            t = torch.tensor(x)
            dist.all_reduce(t)
        """
    [finding] = _src(buggy)
    assert finding.kind == "dtype-mismatch"
    assert "torch.float32 on one, torch.float64 on another" in finding.why and "int64" not in finding.why
    fixed = buggy.replace("torch.tensor(x)", "torch.tensor(x, dtype=torch.float64)")
    assert _src(fixed) == []


def test_review81l_m2_scatter_object_list_source_loses_its_slice_too() -> None:
    buggy = """\
        import torch.distributed as dist

        def main():
            rank = dist.get_rank()
            x = None
            dist.scatter_object_list([x], [1, 2] if rank == 0 else None, src=0)
            print(x)
        """
    [finding] = _src(buggy)
    assert finding.kind == "discarded-output"
    assert "on every rank `x` keeps its own value" in finding.why and "but the source" not in finding.why
    fixed = buggy.replace("x = None\n", "out = [None]\n").replace("[x], [1, 2]", "out, [1, 2]")
    fixed = fixed.replace("print(x)", "print(out[0])")
    assert _src(fixed) == []
    broadcast = buggy.replace(
        "dist.scatter_object_list([x], [1, 2] if rank == 0 else None, src=0)", "dist.broadcast_object_list([x], src=0)"
    )
    [finding] = _src(broadcast)
    assert "every rank but the source" in finding.why


def test_review81l_m3_help_says_a_throwaway_output_is_not_reported() -> None:
    assert "is taken for a wait and not reported" in barrierlab.lint.HELP
    throwaway = """\
        import torch
        import torch.distributed as dist

        def main():
            dist.broadcast(torch.zeros(2), src=0)
            dist.broadcast_object_list([None, None], src=0)
        """
    assert _src(throwaway) == []


def test_review81l_m4_file_race_after_broadcast_says_the_root_is_held_by_some() -> None:
    buggy = """\
        import os
        import torch
        import torch.distributed as dist

        def main(folder):
            rank = dist.get_rank()
            open(os.path.join(folder, f"s{rank}"), "w").close()
            t = torch.zeros(1)
            dist.broadcast(t, src=0)
            if rank == 0:
                print(os.listdir(folder))
        """
    [finding] = _src(buggy)
    assert finding.kind == "file-race"
    assert (
        "nothing torch promises holds the reading rank" in finding.why and "held by some ranks' writes" in finding.why
    )
    fixed = buggy.replace("dist.broadcast(t, src=0)", "dist.barrier()")
    assert _src(fixed) == []


def test_review81l_f2_non_member_uses_the_world_size_the_file_states() -> None:
    correct = """\
        import torch
        import torch.distributed as dist

        WORLD_SIZE = 4

        def main():
            dist.init_process_group("gloo", world_size=WORLD_SIZE)
            rank = dist.get_rank()
            tp_rank = rank % 2
            dp0 = dist.new_group([0, 2])
            dp1 = dist.new_group([1, 3])
            dp_group = dp0 if tp_rank == 0 else dp1
            t = torch.ones(1)
            if tp_rank == 0:
                dist.all_reduce(t, group=dp_group)
        """
    assert [f.kind for f in _src(correct)] == []
    buggy = correct.replace("WORLD_SIZE = 4", "WORLD_SIZE = 8")
    [finding] = _src(buggy)
    assert finding.kind == "non-member" and "the world size the file states (8)" in finding.why
    assert "non-member:" in barrierlab.lint.HELP


def test_review82l_c1_forked_collective_at_a_scripts_top_level() -> None:
    # barrierlab run -n 2 (reviewer's p24_fork.py): both ranks stuck in os.waitpid to the deadline
    buggy = """\
        import os
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        pid = os.fork()
        if pid == 0:
            t = torch.ones(1)
            dist.all_reduce(t)
            os._exit(0)
        os.waitpid(pid, 0)
        dist.barrier()
        """
    assert _kinds(buggy) == [(8, "forked-collective")]
    correct = buggy.replace("    dist.all_reduce(t)\n", "    t.add_(1)\n")
    assert _kinds(correct) == []


def test_review82l_c2_forked_collective_under_a_direct_fork_test() -> None:
    buggy = """\
        import os
        import torch
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
            if os.fork() == 0:
                t = torch.ones(1)
                dist.all_reduce(t)
                os._exit(0)
            dist.barrier()
        main()
        """
    assert _kinds(buggy) == [(8, "forked-collective")]
    assert _kinds(buggy.replace("if os.fork() == 0:", "if not os.fork():")) == [(8, "forked-collective")]
    correct = buggy.replace("    dist.all_reduce(t)\n", "    t.add_(1)\n")
    assert _kinds(correct) == []


def test_review82l_c3_store_barrier_in_a_top_level_loop() -> None:
    # barrierlab run -n 2 (reviewer's p21): rank 1 passed steps 1 and 2 at once while rank 0 still slept
    buggy = """\
        import time
        import torch.distributed as dist
        from torch.distributed.elastic.utils.store import barrier as sbar
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        store = dist.distributed_c10d._get_default_store()
        for step in range(3):
            if rank == 0:
                time.sleep(0.3)
            sbar(store, 2, key_prefix="sync")
        """
    assert _kinds(buggy) == [(10, "store-key")]
    correct = buggy.replace('key_prefix="sync"', 'key_prefix=f"sync/{step}"')
    assert _kinds(correct) == []


def test_review82l_c4_self_state_followed_inside_functions_as_help_says() -> None:
    # the help now says where it holds: inside a function; not a script's top level or a direct m.n = 3
    help_text = " ".join(barrierlab.lint.HELP.split())
    assert "changes when called under such an if or loop inside a function (not at a script's top level" in help_text
    buggy = """\
        import torch.distributed as dist
        class M:
            def __init__(self):
                self.items = []
            def add(self, x):
                self.items.append(x)
            def __len__(self):
                return len(self.items)
        def main():
            dist.init_process_group("gloo")
            rank = dist.get_rank()
            m = M()
            if rank == 0:
                m.add(1)
            for _ in m.items:
                dist.barrier()
        main()
        """
    assert [k for _, k in _kinds(buggy)] == ["rank-dependent-loop"]
    correct = buggy.replace("if rank == 0:\n                m.add(1)", "m.add(1)")
    assert _kinds(correct) == []


def test_review82l_c5_accumulator_of_an_object_read_outside_its_class() -> None:
    # barrierlab run -n 2 (reviewer's r04): rank 0 got garbage int64, rank 1 was killed by a signal
    buggy = """\
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        class Acc:
            def __init__(self):
                self.total = 0
            def add(self, v):
                self.total += v
        a = Acc()
        a.add(1 if rank == 0 else 0.5)
        t = torch.tensor(a.total)
        dist.all_reduce(t)
        """
    assert _kinds(buggy) == [(13, "dtype-mismatch")]
    assert _kinds(buggy.replace("torch.tensor(a.total)", "torch.tensor(a.total, dtype=torch.float64)")) == []
    assert _kinds(buggy.replace("t = torch.tensor(a.total)", "t = torch.tensor(float(a.total))")) == []


def test_review82l_m1_non_member_help_names_where_it_is_checked() -> None:
    help_text = " ".join(barrierlab.lint.HELP.split())
    assert "non-member: a collective on group=g, inside a function," in help_text
    assert "not checked at a script's top level" in help_text
    buggy = """\
        import torch
        import torch.distributed as dist
        WORLD_SIZE = 4
        def main():
            dist.init_process_group("gloo", world_size=WORLD_SIZE)
            g = dist.new_group([0, 1])
            t = torch.ones(1)
            dist.all_reduce(t, group=g)
        main()
        """
    assert [k for _, k in _kinds(buggy)] == ["non-member"]
    correct = buggy.replace(
        "dist.all_reduce(t, group=g)", "if dist.get_rank() < 2:\n                dist.all_reduce(t, group=g)"
    )
    assert _kinds(correct) == []


def test_review82l_m2_lambda_bound_to_a_name_is_followed_as_help_says() -> None:
    help_text = " ".join(barrierlab.lint.HELP.split())
    assert "calls through lambdas (except a lambda bound to a name and called by that name" in help_text
    buggy = """\
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        f = lambda: dist.barrier()
        if rank == 0:
            f()
        """
    assert [k for _, k in _kinds(buggy)] == ["branch"]
    assert _kinds(buggy.replace("if rank == 0:\n            f()", "f()")) == []


def test_review82l_u1_listing_finding_keeps_only_what_holds_in_general() -> None:
    buggy = """\
        import os
        import time
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
            rank = dist.get_rank()
            time.sleep(0.5 if rank == 3 else 0)
            open(os.path.join("d", f"s{rank}"), "w").close()
            obj = [None]
            dist.broadcast_object_list(obj, src=0)
            if rank == 0:
                print(os.listdir("d"))
        main()
        """
    [finding] = _src(buggy)
    assert finding.kind == "file-race"
    assert "rank 0 listed" not in finding.why and "but not rank 3's when rank 3 was" not in finding.why
    assert "may be held by some ranks' writes" in finding.why
    assert "can list the folder before a slower rank's file is there" in " ".join(barrierlab.lint.HELP.split())
    assert _src(buggy.replace("dist.broadcast_object_list(obj, src=0)", "dist.barrier()")) == []


def test_dataclasses_replace_reruns_post_init_and_its_new_group_in_an_except_handler() -> None:
    """Round 26's ``buggy_parallel_dims_replace_rebuilds_group`` (torchtitan ``ParallelDims``): a ``@dataclass``
    whose ``__post_init__`` makes a ``new_group``; ``dataclasses.replace`` builds the copy through ``__init__``, so
    ``__post_init__`` (and its ``new_group``) runs again, here only on the rank whose micro-batch was too big."""
    buggy = """\
        import dataclasses
        import torch.distributed as dist

        class Budget(RuntimeError):
            pass

        @dataclasses.dataclass
        class Dims:
            world_size: int
            micro: int = 8
            group: object = dataclasses.field(default=None, init=False)

            def __post_init__(self):
                self.group = dist.new_group(list(range(self.world_size)))

        def forward(x, micro):
            if len(x) > micro:
                raise Budget()
            return x

        def evaluate(batches, dims):
            for x in batches:
                try:
                    forward(x, dims.micro)
                except Budget:
                    dims = dataclasses.replace(dims, micro=dims.micro // 2)
            dist.barrier(group=dims.group)

        def worker(batches):
            dims = Dims(dist.get_world_size())
            evaluate(batches, dims)
        """
    [finding] = _src(buggy)
    assert (finding.line, finding.kind, finding.condition_line) == (26, "hidden-collective", 25)
    assert "dataclasses.replace() reaches dist.new_group" in finding.why.replace("`", "")
    assert "builds a new Dims through the __init__ @dataclass writes, which runs Dims.__post_init__" in finding.why
    assert "keep collectives out of the handler" in finding.fix
    # the correct twin builds the group once, in a method every rank calls: the copy makes no group
    correct = buggy.replace("def __post_init__(self):", "def build(self):").replace(
        "dims = Dims(dist.get_world_size())", "dims = Dims(dist.get_world_size())\n            dims.build()"
    )
    assert _src(correct) == []
    # a class that is not a dataclass: replace() is no constructor call lint follows, and Dims() runs no hook
    assert _src(buggy.replace("@dataclasses.dataclass\n        ", "")) == []


def test_a_plain_all_reduce_in_the_loop_under_join_is_shadowed_by_no_joinable() -> None:
    """Round 13's ``buggy_join_loss_log_not_joinable`` (the generic_join tutorial's uneven inputs): ``Join([model])``
    shadows DDP's own all-reduces for a rank that has run out of batches, not the loop's loss all-reduce."""
    buggy = """\
        import torch
        import torch.distributed as dist
        from torch.distributed.algorithms.join import Join

        def train(model, batches):
            with Join([model]):
                for x in batches:
                    loss = model(x).sum()
                    loss.backward()
                    logged = loss.detach().clone()
                    dist.all_reduce(logged)
        """
    [finding] = _src(buggy)
    assert (finding.line, finding.kind, finding.condition_line) == (11, "rank-dependent-loop", 7)
    assert "runs only the join hooks of the Joinables handed to Join" in finding.why
    assert "move `dist.all_reduce` out of the `with Join([model]):` block" in finding.fix
    # the correct twin: the all-reduce after the block, where every rank has joined
    correct = buggy.replace("            dist.all_reduce(logged)\n", "        dist.all_reduce(logged)\n")
    assert _src(correct) == []
    # ... or the loss log made a Joinable whose own join hook shadows its all-reduce (round 13's correct twin)
    joinable = """\
        import torch
        import torch.distributed as dist
        from torch.distributed.algorithms.join import Join, Joinable, JoinHook

        class LogHook(JoinHook):
            def main_hook(self):
                dist.all_reduce(torch.zeros(1))

        class LossLog(Joinable):
            def __call__(self, loss):
                Join.notify_join_context(self)
                dist.all_reduce(loss)

            def join_hook(self, **kwargs):
                return LogHook()

        def train(model, batches):
            log = LossLog()
            with Join([model, log]):
                for x in batches:
                    loss = model(x).sum()
                    loss.backward()
                    log(loss.detach())
        """
    assert _src(joinable) == []


_ULTRALYTICS_EPOCHS = textwrap.dedent(
    """\
    import torch
    import torch.distributed as dist

    class Trainer:
        def __init__(self, rank):
            self.rank = rank
            self.epochs = 3
            self.stop = False
            self.model = torch.nn.Linear(4, 1)

        def optimizer_step(self):
            for p in self.model.parameters():
                dist.all_reduce(p.data)

        def _do_train(self):
            RANK = self.rank
            epoch = 0
            while True:
                self.optimizer_step()
                if RANK in {-1, 0}:
                    final_epoch = epoch + 1 >= self.epochs
                if final_epoch:
                    print("validating")
                if RANK in {-1, 0}:
                    self.stop |= final_epoch
                broadcast_list = [self.stop if RANK == 0 else None]
                dist.broadcast_object_list(broadcast_list, 0)
                self.stop = broadcast_list[0]
                if self.stop:
                    break
                epoch += 1
            return epoch
    """
)


def test_an_attribute_set_from_a_broadcast_is_agreed_and_a_local_set_only_on_rank_0_is_unbound_elsewhere() -> None:
    """Modelled on round 42's ultralytics items (PR: "Moves final_epoch calculation outside the rank-restricted
    block"): the buggy twin assigns ``final_epoch`` inside the rank-0 block and reads it on every rank (rank 1 raises
    UnboundLocalError, rank 0 waits in the stop-flag broadcast); the correct twin computes it on every rank. Both
    end each epoch with ``self.stop = broadcast_list[0]`` after ``broadcast_object_list``: the ``if self.stop:
    break`` after it is the same on every rank (it was reported in both twins)."""
    buggy = _src(_ULTRALYTICS_EPOCHS)
    # review87l M2: the header is at the broadcast the others wait in (line 27); the read is in `why`
    assert [(f.line, f.kind, f.condition_line) for f in buggy] == [(27, "early-exit", 20)]
    assert "`final_epoch` is assigned only inside `if RANK in {-1, 0}:`" in buggy[0].why
    assert "UnboundLocalError" in buggy[0].why and "`dist.broadcast_object_list(...)` at line 27" in buggy[0].why
    assert "assign `final_epoch` on every rank" in buggy[0].fix
    assert "UnboundLocalError on the others" in " ".join(barrierlab.lint.HELP.split())
    correct = _ULTRALYTICS_EPOCHS.replace(
        "            if RANK in {-1, 0}:\n                final_epoch = epoch + 1 >= self.epochs\n",
        "            final_epoch = epoch + 1 >= self.epochs\n",
    )
    assert correct != _ULTRALYTICS_EPOCHS and _src(correct) == []
    # an else that assigns it, or a read only under the same test, leaves no rank without it
    with_else = _ULTRALYTICS_EPOCHS.replace(
        "final_epoch = epoch + 1 >= self.epochs\n",
        "final_epoch = epoch + 1 >= self.epochs\n            else:\n                final_epoch = False\n",
    )
    assert _src(with_else) == []
    same_test = _ULTRALYTICS_EPOCHS.replace("if final_epoch:", "if RANK == 0 and final_epoch:")
    assert _src(same_test) == []
    # without the write-back from the broadcast, rank 0's own stop decides the break: reported
    no_write_back = correct.replace("            self.stop = broadcast_list[0]\n", "")
    assert no_write_back != correct
    assert "early-exit" in {f.kind for f in _src(no_write_back)}
    # the break read before the write-back still reads rank 0's own decision
    early_break = correct.replace(
        "            broadcast_list = [",
        "            if self.stop:\n                break\n            broadcast_list = [",
    )
    assert early_break != correct and "early-exit" in {f.kind for f in _src(early_break)}


_SGLANG_PROBE = textwrap.dedent(
    """\
    import contextlib
    import torch
    import torch.distributed as dist

    def create_shm(name):
        if len(name) > 31:
            raise OSError(63, "File name too long", name)
        return open(name, "wb")

    def in_the_same_node_as(pg, source_rank=0):
        rank = dist.get_rank(group=pg)
        is_in_the_same_node = torch.tensor([0] * dist.get_world_size(group=pg), dtype=torch.int32)
        shm = None
        try:
            with contextlib.suppress(OSError):
                if rank == source_rank:
                    shm = create_shm("sglang_node_probe_0123456789abcdef")
                    dist.broadcast_object_list([shm.name], src=source_rank, group=pg)
                    is_in_the_same_node[rank] = 1
                else:
                    recv = [None]
                    dist.broadcast_object_list(recv, src=source_rank, group=pg)
                    if recv[0] is not None:
                        is_in_the_same_node[rank] = 1
        except Exception as e:
            print(f"rank {rank}: error ignored: {e}")
        dist.barrier(group=pg)
        dist.all_reduce(is_in_the_same_node, group=pg)
        return is_in_the_same_node.tolist()
    """
)


def test_a_broadcast_inside_suppress_after_a_raising_probe_is_skipped_and_a_caught_raise_leaves_no_rank() -> None:
    """Modelled on round 42's sglang items (PR: "Limit the OSError suppression to local shared-memory
    creation/opening"): the buggy twin wraps the probe and the broadcast in one ``contextlib.suppress(OSError)``, so
    the source rank whose ``shm_open`` fails skips its broadcast while the others wait in theirs; the correct twin
    suppresses around the probe only and broadcasts ``None``. Both wrap it all in ``try: ... except Exception:
    print(...)``: the raising helper does not make the source rank leave before the barrier (it was reported in
    both twins), and ``is_in_the_same_node[rank] = 1`` sets an element of a tensor, it adds no key to a dict."""
    [finding] = _src(_SGLANG_PROBE)
    assert (finding.line, finding.kind, finding.condition_line) == (18, "except-path", 15)
    assert "sits in `with contextlib.suppress(OSError):` at line 15" in finding.why
    assert "goes on after the `with` without making this call" in finding.why
    assert "make this call after the `with` on every rank" in finding.fix
    assert "inside with contextlib.suppress(OSError):" in " ".join(barrierlab.lint.HELP.split())
    probe_and_broadcast = """\
        with contextlib.suppress(OSError):
            if rank == source_rank:
                shm = create_shm("sglang_node_probe_0123456789abcdef")
                dist.broadcast_object_list([shm.name], src=source_rank, group=pg)
    """
    probe_only = """\
        if True:
            if rank == source_rank:
                name = None
                with contextlib.suppress(OSError):
                    shm = create_shm("sglang_node_probe_0123456789abcdef")
                    name = shm.name
                dist.broadcast_object_list([name], src=source_rank, group=pg)
    """
    correct = _SGLANG_PROBE.replace(probe_and_broadcast, probe_only)
    assert correct != _SGLANG_PROBE and _src(correct) == []
    # without the handler that goes on, the source rank's raise does leave before the barrier
    unhandled = correct.replace(
        "    except Exception as e:\n        print(", "    except Exception as e:\n        raise RuntimeError("
    )
    assert unhandled != correct and "early-exit" in {f.kind for f in _src(unhandled)}
    # a handler that catches only ValueError does not catch the OSError: still reported
    narrow = correct.replace("except Exception as e:", "except ValueError as e:")
    assert narrow != correct and "early-exit" in {f.kind for f in _src(narrow)}
    # a suppress of ImportError alone swallows nothing of the rank's own
    imports = _SGLANG_PROBE.replace("contextlib.suppress(OSError)", "contextlib.suppress(ImportError)")
    assert "except-path" not in {f.kind for f in _src(imports)}
    # a dict keyed under the test on the parameter still changes size between ranks
    keyed = correct.replace("torch.tensor([0] * dist.get_world_size(group=pg), dtype=torch.int32)", "{}").replace(
        "dist.all_reduce(is_in_the_same_node, group=pg)",
        "dist.all_reduce(torch.tensor(list(is_in_the_same_node.values())), group=pg)",
    )
    assert "size-mismatch" in {f.kind for f in _src(keyed)}


_TORCHREC_FIT = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn
    import torch.distributed as dist

    TRAIN_ROWS = {0: 12, 1: 12}
    EVAL_ROWS = {0: 20, 1: 16}
    BATCH_SIZE = 4

    class ShardedEmbedding(nn.Module):
        def __init__(self, rank):
            super().__init__()
            torch.manual_seed(100 + rank)
            self.local_table = nn.Embedding(10, 4)

    class DistributedModelParallel(nn.Module):
        def __init__(self, rank):
            super().__init__()
            self.sparse_arch = ShardedEmbedding(rank)
            self.over_arch = nn.Sequential(nn.Linear(11, 16), nn.ReLU(), nn.Linear(16, 1))

    class Wrapper:
        def __init__(self, rank):
            self.rank = rank
            self.dist_model = DistributedModelParallel(rank)

        def training_step(self, batch):
            self.dist_model.over_arch(batch).sum().backward()
            for p in self.dist_model.over_arch.parameters():
                dist.all_reduce(p.grad)

    def make_rows(rank, n):
        g = torch.Generator().manual_seed(rank)
        data = torch.randn(n, 11, generator=g)
        return [data[i : i + BATCH_SIZE] for i in range(0, n, BATCH_SIZE)]

    def fit(module):
        rank = module.rank
        for batch in make_rows(rank, TRAIN_ROWS[rank]):
            module.training_step(batch)

    fit(Wrapper(dist.get_rank()))
    """
)


def test_parameters_of_a_module_built_alike_and_rows_from_a_table_of_equal_counts_are_as_many_on_every_rank() -> None:
    """Modelled on round 32's torchrec items (torchrec issue: evaluation hangs with unequal batches per rank): both
    twins train on ``make_rows(rank, TRAIN_ROWS[rank])`` with ``TRAIN_ROWS = {0: 12, 1: 12}`` and average the
    gradients of ``self.dist_model.over_arch.parameters()``, where ``DistributedModelParallel(rank)`` takes the
    rank for its embedding shard only; the dense tower is built alike on every rank. Lint reported both loops in
    both twins; the buggy twin's own bug, a loop over the rank's unequal ``EVAL_ROWS`` batches, stays reported."""
    assert _src(_TORCHREC_FIT) == []
    # unequal counts in the table: the training loop is reported
    uneven = _TORCHREC_FIT.replace("TRAIN_ROWS[rank]", "EVAL_ROWS[rank]")
    # the loop's call in fit(), and (lintrecall31's share counter) the call that hands fit() the rank's object
    assert [(f.line, f.kind) for f in _src(uneven)] == [(39, "hidden-collective"), (41, "hidden-collective")]
    # a tower whose size comes from the rank: its parameters are not as many everywhere
    ranked_tower = _TORCHREC_FIT.replace("nn.Linear(16, 1))", "*[nn.Linear(16, 16) for _ in range(rank)])")
    assert ranked_tower != _TORCHREC_FIT
    assert [(f.line, f.kind) for f in _src(ranked_tower)] == [(29, "rank-dependent-loop")]
    # a tower another line of the file replaces is not followed
    replaced = _TORCHREC_FIT.replace(
        "    def training_step(self, batch):",
        "    def grow(self):\n        self.dist_model.over_arch = nn.Linear(11, self.rank + 1)\n\n    def training_step(self, batch):",
    )
    assert replaced != _TORCHREC_FIT and "rank-dependent-loop" in {f.kind for f in _src(replaced)}
    # a table someone changes is not read as constant
    changed = _TORCHREC_FIT.replace("def fit(module):\n", "def fit(module):\n    TRAIN_ROWS[1] = 13\n")
    assert changed != _TORCHREC_FIT and "hidden-collective" in {f.kind for f in _src(changed)}


# --------------------------------------------------------------------------- lintrecall31: shares counted per rank


def test_a_helper_looping_over_a_share_dealt_by_chunk_index_counts_different_trips_per_rank() -> None:
    """round41 buggy_litdata_chunks_to_ranks_uneven_batches (litdata: chunks dealt `index % world_size == rank`):
    chunks of 6, 3, 5 and 4 items give rank 0 11 items and rank 1 7, so 5 and 3 batches of 2 (drop_last), and
    `train_epoch` makes one DDP backward per batch. Lint counts the trips of the helper's loop for each rank and
    reports the call. The twin that deals items (not chunks) round-robin, cut to a multiple of the world size, is
    quiet; so is a share read from a file (its length is unknown) and one whose count is all-reduced first."""
    head = textwrap.dedent(
        """\
        import json
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        WORLD_SIZE = 2
        CHUNK_SIZES = [6, 3, 5, 4]

        def build_chunks():
            chunks, start = [], 0
            for size in CHUNK_SIZES:
                chunks.append(list(range(start, start + size)))
                start += size
            return chunks

        def items_for_rank(rank, world_size):
            chunks = build_chunks()
            my_chunks = [chunk for index, chunk in enumerate(chunks) if index % world_size == rank]
            return [item for chunk in my_chunks for item in chunk]

        def batches(items, batch_size):
            full = len(items) // batch_size
            return [items[i * batch_size:(i + 1) * batch_size] for i in range(full)]

        def train_epoch(model, optimizer, loader):
            for batch in loader:
                loss = model(torch.tensor([[float(i)] for i in batch])).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

        def worker():
            rank, world_size = dist.get_rank(), dist.get_world_size()
            model = DDP(torch.nn.Linear(1, 1))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        """
    )
    buggy = (
        head + "    loader = batches(items_for_rank(rank, world_size), 2)\n    train_epoch(model, optimizer, loader)\n"
    )
    found = lint_source(buggy)
    assert [(f.line, f.kind) for f in found] == [(37, "hidden-collective")], found
    assert "rank 0: 5, rank 1: 3" in found[0].condition and "train_epoch()" in found[0].condition, found[0].condition
    assert "different number of times" in found[0].why, found[0].why
    assert "same number of iterations" in found[0].fix, found[0].fix
    items = "    items = [i for chunk in build_chunks() for i in chunk]\n    items = items[: len(items) // world_size * world_size]\n"
    even = (
        head + items + "    loader = batches(items[rank::world_size], 2)\n    train_epoch(model, optimizer, loader)\n"
    )
    assert lint_source(even) == []
    unknown = (
        head
        + "    loader = batches(json.load(open('shards.json'))[rank::world_size], 2)\n    train_epoch(model, optimizer, loader)\n"
    )
    assert lint_source(unknown) == []
    agreed = head + (
        "    loader = batches(items_for_rank(rank, world_size), 2)\n    n = torch.tensor(len(loader))\n"
        "    dist.all_reduce(n, op=dist.ReduceOp.MIN)\n    train_epoch(model, optimizer, loader[: int(n)])\n"
    )
    assert lint_source(agreed) == []


def test_a_sampler_of_the_file_split_by_ceil_gives_the_last_rank_fewer_batches() -> None:
    """round29 buggy_dlio_sampler_ceil_split_step_barrier (mlcommons/storage #455): `dlio_sampler` gives each of
    3 ranks `ceil(19 / 3) = 7` samples, the last one 5; a `DataLoader(batch_size=3, drop_last=True)` over it
    runs 2, 2 and 1 steps, and `train_epoch` makes a barrier per step. Lint runs the sampler's `__init__` and
    `__len__` for each rank. The twin with a DistributedSampler (padded to the same count on every rank) is quiet,
    and so is a capped loop (`if step >= 1: break`) that every rank runs as often."""
    head = textwrap.dedent(
        """\
        import math
        import torch
        import torch.distributed as dist
        from torch.utils.data import DataLoader, Dataset, DistributedSampler, Sampler

        WORLD_SIZE = 3
        NUM_SAMPLES = 19

        class Samples(Dataset):
            def __init__(self, n):
                self.data = torch.randn(n, 16)

            def __len__(self):
                return len(self.data)

            def __getitem__(self, idx):
                return self.data[idx]

        class CeilSampler(Sampler):
            def __init__(self, rank, size, num_samples):
                per_proc = int(math.ceil(num_samples / size))
                start = rank * per_proc
                end = min((rank + 1) * per_proc, num_samples)
                self.indices = list(range(start, end))

            def __len__(self):
                return len(self.indices)

            def __iter__(self):
                yield from self.indices

        def train_epoch(loader):
            for step, batch in enumerate(loader):
                batch.sum()
                dist.barrier()

        def worker():
            rank, size = dist.get_rank(), dist.get_world_size()
            dataset = Samples(NUM_SAMPLES)
        """
    )
    buggy = (
        head
        + "    sampler = CeilSampler(rank, size, NUM_SAMPLES)\n"
        + ("    loader = DataLoader(dataset, batch_size=3, sampler=sampler, drop_last=True)\n    train_epoch(loader)\n")
    )
    found = lint_source(buggy)
    assert [(f.line, f.kind) for f in found] == [(42, "hidden-collective")], found
    assert "rank 0: 2, rank 1: 2, rank 2: 1" in found[0].condition, found[0].condition
    padded = buggy.replace(
        "CeilSampler(rank, size, NUM_SAMPLES)", "DistributedSampler(dataset, num_replicas=size, rank=rank)"
    )
    assert lint_source(padded) == []
    capped = buggy.replace("        batch.sum()\n", "        if step >= 1:\n            break\n        batch.sum()\n")
    assert lint_source(capped) == []


def test_a_loop_over_a_share_of_data_a_helper_returns_is_counted_per_rank() -> None:
    """round37's allennlp reading (`read_instances()[rank::world]`, 11 instances: 6 and 5 on 2 ranks): lint's
    length rules cannot see the length of data a function returns, but the share counter runs the helper. A
    loop with a DDP backward per item in the same function is reported; with 12 instances it is quiet, and so
    is a loop that leaves when an all-reduced `done` flag says so (AllenNLP's own guard)."""
    source = """\
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        NUM_INSTANCES = 11

        def read_instances():
            return [torch.randn(1, 4) for _ in range(NUM_INSTANCES)]

        def worker():
            rank, world = dist.get_rank(), dist.get_world_size()
            model = DDP(torch.nn.Linear(4, 1))
            for x in read_instances()[rank::world]:
                model(x).sum().backward()
        """
    found = lint_source(textwrap.dedent(source))
    assert {(f.line, f.kind) for f in found} == {(14, "rank-dependent-loop")}, found  # DDP forward and backward
    assert all("rank 0: 6, rank 1: 5" in f.condition for f in found), found
    assert lint_source(textwrap.dedent(source.replace("= 11", "= 24"))) == []
    guarded = source.replace(
        "            model(x).sum().backward()\n",
        "            done = torch.tensor(0)\n            dist.all_reduce(done)\n            if done.item():\n"
        "                break\n            model(x).sum().backward()\n",
    )
    assert [f for f in lint_source(textwrap.dedent(guarded)) if "rank 0: 6" in f.condition] == []


def test_a_plain_all_reduce_in_a_join_loop_over_uneven_batches_is_not_shadowed() -> None:
    """round13 buggy_join_loss_log_not_joinable: `make_batches(rank)` gives rank 0 five batches and rank 1 three
    (`BATCHES_PER_RANK = {0: 5, 1: 3}`); `Join([model])` shadows DDP's all-reduces for the rank that ran out, but
    not the loss log's plain `dist.all_reduce`, which rank 0 makes twice more. The twin whose log is a Joinable
    handed to Join (its all_reduce made inside the Joinable's call) is quiet, and so is the DDP step alone."""
    head = textwrap.dedent(
        """\
        import torch
        import torch.distributed as dist
        from torch.distributed.algorithms.join import Join
        from torch.nn.parallel import DistributedDataParallel as DDP

        BATCHES_PER_RANK = {0: 5, 1: 3}

        def make_batches(rank):
            return [torch.randn(4, 6) for _ in range(BATCHES_PER_RANK[rank])]

        def worker():
            rank = dist.get_rank()
            model = DDP(torch.nn.Linear(6, 1))
            train(model, make_batches(rank))

        def train(model, batches):
            with Join([model]):
                for x in batches:
                    loss = model(x).pow(2).mean()
                    loss.backward()
        """
    )
    buggy = head + "            logged = loss.detach().clone()\n            dist.all_reduce(logged)\n"
    found = lint_source(buggy)
    # the call that hands train() the uneven batches, and (lintrecall31b's check) the all_reduce under Join itself
    assert [(f.line, f.kind) for f in found] == [(14, "hidden-collective"), (22, "rank-dependent-loop")], found
    assert "rank 0: 5, rank 1: 3" in found[0].condition and found[0].collective == "train -> dist.all_reduce", found
    assert lint_source(head) == []
    joinable = (
        head.replace("Join([model])", "Join([model, log])").replace(
            "    with Join", "    log = LossLog()\n    with Join"
        )
        + "            log(loss.detach())\n"
    )
    joinable += textwrap.dedent(
        """\

        class LossLog:
            def __call__(self, loss):
                dist.all_reduce(loss)
        """
    )
    assert lint_source(joinable) == []


def test_a_batch_size_each_rank_detects_for_itself_gives_different_numbers_of_batches() -> None:
    """round14 buggy_auto_batch_size_per_rank (huggingface/lighteval #896): `detect_batch_size()` halves 16 until
    the rank's memory budget (8 rows on rank 0, 4 on rank 1) fits, so 12 requests make 2 batches on rank 0 and 3
    on rank 1, each a row-parallel forward with an all_reduce. Lint runs the `while` loop for each rank. The twin
    that takes the minimum over the ranks (an all_reduce with MIN) is quiet."""
    head = textwrap.dedent(
        """\
        import torch
        import torch.distributed as dist

        BUDGET = {0: 8, 1: 4}

        class RowParallel(torch.nn.Module):
            def forward(self, x):
                dist.all_reduce(x)
                return x

        def fits(batch_size):
            return batch_size <= BUDGET[dist.get_rank()]

        def detect_batch_size(start=16):
            batch_size = start
            while batch_size > 1 and not fits(batch_size):
                batch_size //= 2
            return batch_size

        def score(layer, requests, batch_size):
            for i in range(0, len(requests), batch_size):
                layer(requests[i : i + batch_size])

        def worker():
            layer = RowParallel()
            requests = torch.randn(12, 8)
            batch_size = detect_batch_size()
        """
    )
    buggy = head + "    score(layer, requests, batch_size)\n"
    found = lint_source(buggy)
    assert [(f.line, f.kind) for f in found] == [(28, "hidden-collective")], found
    assert "given batch_size by this call" in found[0].condition, found[0].condition
    assert "rank 0: 2, rank 1: 3" in found[0].condition, found[0].condition
    agreed = head + (
        "    size = torch.tensor(batch_size)\n    dist.all_reduce(size, op=dist.ReduceOp.MIN)\n"
        "    score(layer, requests, int(size))\n"
    )
    assert lint_source(agreed) == []


def test_an_unpadded_eval_sampler_gives_ranks_different_numbers_of_gathered_batches() -> None:
    """round11 buggy_eval_sampler_per_batch_gather (DeepDeblur-PyTorch #44: 10 samples on 3 GPUs): an eval sampler
    without DistributedSampler's padding gives 4, 3 and 3 samples, so 2, 1 and 1 batches of 3 out of a
    `DataLoader` over a `TensorDataset`, and `evaluate` all-gathers once per batch. The twin that gathers once
    after the loop is quiet, and so is the loop over a DistributedSampler's padded share."""
    head = textwrap.dedent(
        """\
        import torch
        import torch.distributed as dist
        from torch.utils.data import DataLoader, DistributedSampler, Sampler, TensorDataset

        WORLD_SIZE = 3

        class EvalSampler(Sampler):
            def __init__(self, dataset, num_replicas, rank):
                self.total_size = len(dataset)
                self.num_samples = len(range(rank, self.total_size, num_replicas))

            def __len__(self):
                return self.num_samples

        def gather_rows(tensor):
            out = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
            dist.all_gather(out, tensor)
            return torch.cat(out)

        def evaluate(loader):
            rows = []
            for idx, x in loader:
                rows.append(gather_rows(idx))
            return rows

        def worker():
            rank, world = dist.get_rank(), dist.get_world_size()
            dataset = TensorDataset(torch.arange(10), torch.randn(10, 6))
        """
    )
    buggy = head + "    evaluate(DataLoader(dataset, batch_size=3, sampler=EvalSampler(dataset, world, rank)))\n"
    found = lint_source(buggy)
    assert [(f.line, f.kind) for f in found] == [(29, "hidden-collective")], found
    assert "rank 0: 2, rank 1: 1, rank 2: 1" in found[0].condition, found[0].condition
    # with no world size stated lint tries 2, 4 and 8 ranks: 10 samples make the same number of batches of 3 on each
    assert lint_source(buggy.replace("WORLD_SIZE = 3\n", "")) == []
    padded = buggy.replace("EvalSampler(dataset, world, rank)", "DistributedSampler(dataset, world, rank)")
    assert lint_source(padded) == []


def test_a_finite_stream_object_yields_fewer_blocks_on_the_rank_with_fewer_files() -> None:
    """round41 buggy_parcae_finite_stream_silent_exit (sandyresearch/parcae #12): each rank streams its own parquet
    files (2 on rank 0, 3 on rank 1, 2 rows each) through iterable classes whose `__iter__` are generators, with
    `repetitions=None` (one pass); `zip(range(MAX_STEPS), loader)` then runs 4 DDP steps on rank 0 and 6 on rank 1.
    Lint runs the generators for each rank. With `repetitions=2` the stream wraps around and both ranks reach
    MAX_STEPS: quiet."""
    source = textwrap.dedent(
        """\
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        MAX_STEPS = 6
        FILES_PER_RANK = {0: 2, 1: 3}

        class Stream:
            def __init__(self, files, repetitions):
                self.files = files
                self.repetitions = repetitions

            def __iter__(self):
                self._state = {"pass": 0}
                while True:
                    for rows in self.files:
                        yield from rows
                    self._state["pass"] += 1
                    if self.repetitions is None or self._state["pass"] >= self.repetitions:
                        return

        class Packed:
            def __init__(self, stream):
                self.stream = stream

            def __iter__(self):
                for row in self.stream:
                    yield torch.tensor(row)

        def build_stream(rank, repetitions):
            files = [[[1.0, 2.0], [3.0, 4.0]] for f in range(FILES_PER_RANK[rank])]
            return Stream(files, repetitions=repetitions)

        def train(model, loader):
            for step, block in zip(range(MAX_STEPS), loader):
                model(block).sum().backward()

        def worker():
            rank = dist.get_rank()
            model = DDP(torch.nn.Linear(2, 1))
            stream = build_stream(rank, repetitions=None)
            train(model, Packed(stream))
        """
    )
    found = lint_source(source)
    assert [(f.line, f.kind) for f in found] == [(42, "hidden-collective")], found
    assert "rank 0: 4, rank 1: 6" in found[0].condition and "given Packed(stream) by" in found[0].condition, found
    assert lint_source(source.replace("repetitions=None)", "repetitions=2)")) == []


def test_a_trainer_method_looping_over_the_loader_its_constructor_stored_is_counted_per_rank() -> None:
    """round34 buggy_composer_rank_dependent_dataloader_length (mosaicml/composer #3415): `Trainer(model,
    ShardDataLoader(rank), ...)` stores a loader over the rank's own shard (40 rows on rank 0, 32 on rank 1, batches
    of 8), and `_train_loop` runs a DDP step per batch of `self._iter_dataloader()`: 5 and 4 steps. Lint builds the
    object at its construction call for each rank and counts the method's loop. With shards of the same size it is
    quiet."""
    source = textwrap.dedent(
        """\
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        SHARD_SIZES = {0: 40, 1: 32}
        BATCH_SIZE = 8

        class ShardDataLoader:
            def __init__(self, rank):
                self.x = torch.randn(SHARD_SIZES[rank], 10)

            def __iter__(self):
                for i in range(0, len(self.x), BATCH_SIZE):
                    yield self.x[i : i + BATCH_SIZE]

        class Trainer:
            def __init__(self, model, train_dataloader):
                self.model = DDP(model)
                self.train_dataloader = train_dataloader

            def _iter_dataloader(self):
                for batch in self.train_dataloader:
                    yield batch

            def fit(self):
                for batch in self._iter_dataloader():
                    self.model(batch).sum().backward()

        def worker():
            rank = dist.get_rank()
            Trainer(torch.nn.Linear(10, 1), ShardDataLoader(rank)).fit()
        """
    )
    found = lint_source(source)
    assert {(f.line, f.kind) for f in found} == {(27, "rank-dependent-loop")}, found  # DDP forward and backward
    assert all("rank 0: 5, rank 1: 4; self built at line 31" in f.condition for f in found), found
    assert lint_source(source.replace("{0: 40, 1: 32}", "{0: 40, 1: 40}")) == []


_PUFFERDRIVE_GUARD = """\
    import os
    import torch.distributed as dist

    def build_ocean(path):
        with open(path, "wb") as f:
            f.write(b"ELF")
        return 0

    def ensure_drive_binary(workdir):
        if dist.is_initialized():
            if dist.get_rank() != 0:
                dist.barrier()
                return
        path = os.path.join(workdir, "visualize")
        if os.path.exists(path):
            os.remove(path)
        if build_ocean(path) != 0:
            raise RuntimeError("Failed to build visualize binary for rendering")
        if dist.is_initialized():
            dist.barrier()
    """


def test_a_plain_test_repeated_around_the_early_barrier_and_the_closing_one_goes_the_same_way() -> None:
    """Modelled on round 43's PufferDrive items (Emerge-Lab/PufferDrive issue #281, the guard its maintainer
    accepted): under ``if dist.is_initialized():`` the ranks other than 0 enter a barrier and return; rank 0
    builds the binary and reaches the closing ``barrier()`` under the same ``if dist.is_initialized():``. The
    test does not depend on the rank, so both ``if``s go the same way on every rank and each rank makes one
    barrier; lint read the second ``if`` as an opaque step and reported both barriers."""
    assert _src(_PUFFERDRIVE_GUARD) == []
    # rank 0 never reaches a barrier: the others' early one waits for it
    close = "        if dist.is_initialized():\n            dist.barrier()\n"
    no_close = _PUFFERDRIVE_GUARD.replace(close, "")
    assert no_close != _PUFFERDRIVE_GUARD
    assert {f.kind for f in _src(no_close)} == {"branch"}
    # the closing barrier under another test (the render switch): not the same way on every path
    other = _PUFFERDRIVE_GUARD.replace(close, close.replace("dist.is_initialized()", "os.environ.get('RENDER')"))
    assert other != _PUFFERDRIVE_GUARD and _src(other) != []


_MINERVA_CACHE = """\
    import pickle
    import torch.distributed as dist

    def create_subdataset(params):
        return {"features": list(range(params["n"]))}

    def cache_dataset(dataset, cached_dataset_path):
        with open(cached_dataset_path, "xb") as fp:
            pickle.dump(dataset, fp)

    def load_dataset_from_cache(cached_dataset_path):
        with open(cached_dataset_path, "rb") as fp:
            return pickle.load(fp)

    def get_subdataset(params, cache_dir):
        cached_dataset_path = cache_dir / f"{params['n']}.obj"
        if cached_dataset_path.exists():
            sub_dataset = load_dataset_from_cache(cached_dataset_path)
        elif dist.is_available() and dist.is_initialized():
            rank = dist.get_rank()
            dist.barrier()
            if rank == 0:
                sub_dataset = create_subdataset(params)
                cache_dataset(sub_dataset, cached_dataset_path)
            else:
                sub_dataset = None
            dist.barrier()
            if rank != 0:
                sub_dataset = load_dataset_from_cache(cached_dataset_path)
        else:
            sub_dataset = create_subdataset(params)
            cache_dataset(sub_dataset, cached_dataset_path)
        return sub_dataset
    """


def test_a_look_at_a_file_whose_every_change_is_fenced_by_two_barriers_answers_alike() -> None:
    """Modelled on round 44's Minerva items (Pale-Blue-Dot-97/Minerva issue #421, fix commit fc61c317): the
    ranks that do not find the cache enter a barrier, rank 0 builds and caches the dataset, a second barrier, then
    the others load it; without a process group the one process builds and caches it. No rank can create the
    file before every rank has looked (the first barrier waits for all of them), and every rank that looks again
    comes after the second: on ranks that share the file system the look answers alike. Lint reported both
    barriers as reached only where the file was missing."""
    assert _src(_MINERVA_CACHE) == []
    # rank 0 caches with no barrier before it: a slower rank can find the file rank 0 just wrote
    first = "            dist.barrier()\n            if rank == 0:"
    early = _MINERVA_CACHE.replace(first, "            if rank == 0:")
    assert early != _MINERVA_CACHE and {f.kind for f in _src(early)} == {"branch"}
    # a helper every rank calls also writes the file, with no barrier around it
    unfenced = _MINERVA_CACHE.replace(
        "            sub_dataset = load_dataset_from_cache(cached_dataset_path)\n        elif",
        "            sub_dataset = load_dataset_from_cache(cached_dataset_path)\n"
        "            cache_dataset(sub_dataset, cached_dataset_path)\n        elif",
    )
    assert unfenced != _MINERVA_CACHE and {f.kind for f in _src(unfenced)} == {"branch"}
    # the writer handed on as a callback: lint does not see where it writes
    handed = _MINERVA_CACHE.replace(
        "cache_dataset(sub_dataset, cached_dataset_path)\n            else:",
        "run(cache_dataset, sub_dataset, cached_dataset_path)\n            else:",
    )
    assert handed != _MINERVA_CACHE and {f.kind for f in _src(handed)} == {"branch"}


_TRAIN_LLM_FINAL_EVAL = """\
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(4, 4)
            self.register_buffer("causal_mask", torch.tril(torch.ones(4, 4)))

        def forward(self, x):
            return self.head(x) * self.causal_mask[0]

    def unwrap(model):
        return model.module if isinstance(model, DDP) else model

    @torch.no_grad()
    def eval_dev(model, rows):
        return sum(model(x).sum().item() for x in rows)

    def worker(rows):
        is_main = dist.get_rank() == 0
        model = DDP(TinyLM())
        for x in rows:
            model(x).sum().backward()
            dev = torch.tensor([eval_dev(model, rows)])
            dist.all_reduce(dev)
        if is_main:
            dev = eval_dev(unwrap(model), rows)
    """


def test_a_model_handed_through_a_function_that_returns_its_module_is_no_ddp_model() -> None:
    """Modelled on round 43's train-llm-from-scratch items (FareedKhan-dev/train-llm-from-scratch PR #32): the
    periodic evaluation hands every rank's DDP model to ``eval_dev``; the final one, on the main rank only, hands
    it ``unwrap(model)``, ``model.module if isinstance(model, DDP) else model``, whose forward issues no
    collective. Lint took ``eval_dev``'s parameter for the DDP model at every call and reported the final one."""
    assert _src(_TRAIN_LLM_FINAL_EVAL) == []
    # the bug the PR fixes: the final evaluation through the wrapper on the main rank alone
    buggy = _TRAIN_LLM_FINAL_EVAL.replace("eval_dev(unwrap(model), rows)", "eval_dev(model, rows)")
    assert buggy != _TRAIN_LLM_FINAL_EVAL
    assert [(f.line, f.kind) for f in _src(buggy)] == [(30, "hidden-collective")]
    # a helper that hands the wrapper back (a flag, not the wrapper's type, picks the module) is no unwrapper
    flagged = _TRAIN_LLM_FINAL_EVAL.replace("if isinstance(model, DDP) else model", "if False else model")
    assert flagged != _TRAIN_LLM_FINAL_EVAL
    assert [(f.line, f.kind) for f in _src(flagged)] == [(30, "hidden-collective")]
    # getattr(model, "module", model) unwraps too
    via_getattr = _TRAIN_LLM_FINAL_EVAL.replace(
        "model.module if isinstance(model, DDP) else model", 'getattr(model, "module", model)'
    )
    assert via_getattr != _TRAIN_LLM_FINAL_EVAL and _src(via_getattr) == []


_SGLANG_TP_GROUP = """\
    import torch.distributed as dist

    class Scheduler:
        def __init__(self, tp_rank, tp_group):
            self.tp_rank, self.tp_group = tp_rank, tp_group
            self.waiting_queue = []

        def abort_on_waiting_timeout(self, waited):
            decision = [None]
            if self.tp_rank == 0:
                decision[0] = [rid for rid, seconds in waited.items() if seconds > 1.0]
            dist.broadcast_object_list(decision, src=0, group=self.tp_group)
            return decision[0]

    def worker(waited):
        rank = dist.get_rank()
        tp_group = dist.new_group(ranks=list(range(dist.get_world_size())))
        return Scheduler(rank, tp_group).abort_on_waiting_timeout(waited)
    """


def test_src_0_on_a_group_of_every_rank_handed_to_the_constructor_is_global_rank_0() -> None:
    """Modelled on round 43's SGLang items (sgl-project/sglang PR #27164): rank 0 of the TP group decides which
    waiting requests to abort and broadcasts the list with ``src=0, group=self.tp_group``. The scheduler gets
    its group through ``__init__``, from ``new_group(ranks=list(range(dist.get_world_size())))``, which holds
    every rank: global rank 0 is its rank 0. Lint followed only a group assigned from ``new_group`` in the same
    scope, and reported ``src=0`` as a group rank."""
    assert _src(_SGLANG_TP_GROUP) == []
    # a TP group of the ranks after 0: src=0 names a rank outside it
    later = _SGLANG_TP_GROUP.replace("list(range(dist.get_world_size()))", "list(range(1, dist.get_world_size()))")
    assert later != _SGLANG_TP_GROUP and [f.kind for f in _src(later)] == ["group-rank"]
    # a second scheduler built on a group lint cannot read: not every call hands a group holding rank 0
    other = _SGLANG_TP_GROUP + "\n    def replica(group):\n        return Scheduler(dist.get_rank(), group)\n"
    assert [f.kind for f in _src(other)] == ["group-rank"]


REVIEW87L_HELPERS = """\
import torch
import torch.distributed as dist


def sync():
    dist.barrier()


def save_and_sync(p):
    torch.save({"a": 1}, p)
    dist.barrier()


def main():
    dist.init_process_group("gloo")
    p = "/tmp/r01.pt"
    if dist.get_rank() == 0:
        save_and_sync(p)
    else:
        sync()
    x = torch.load(p)
    dist.destroy_process_group()
"""


def test_branches_making_the_same_collectives_through_different_helpers_are_quiet() -> None:
    """review87l C1: rank 0 calls save_and_sync() (a save, then dist.barrier()), the others sync()
    (dist.barrier()): every rank makes one barrier (run on 2 and 4 ranks: all finished, 1 barrier each), so
    lint compares what the branches' calls reach, not which function they call."""
    assert lint_source(REVIEW87L_HELPERS) == []
    # the twins: a helper that makes one more collective, or a barrier only under a test, is another trace
    extra = REVIEW87L_HELPERS.replace(
        'torch.save({"a": 1}, p)\n    dist.barrier()', 'torch.save({"a": 1}, p)\n    dist.barrier()\n    dist.barrier()'
    )
    assert [f.kind for f in lint_source(extra)] == ["hidden-collective", "hidden-collective"]
    other = REVIEW87L_HELPERS.replace(
        "def sync():\n    dist.barrier()", "def sync():\n    dist.all_reduce(torch.ones(1))"
    )
    assert {f.collective for f in lint_source(other)} == {"save_and_sync -> dist.barrier", "sync -> dist.all_reduce"}
    gated = REVIEW87L_HELPERS.replace(
        "def sync():\n    dist.barrier()", "def sync(flag=False):\n    if flag:\n        dist.barrier()"
    )
    assert [f.collective for f in lint_source(gated)] == ["save_and_sync -> dist.barrier"]
    # a collective the helper-calling branch makes beyond the helper's: only that one is reported
    more = REVIEW87L_HELPERS.replace(
        "        save_and_sync(p)\n", "        save_and_sync(p)\n        dist.all_reduce(x)\n"
    )
    more = more.replace("    p = ", "    x = torch.ones(1)\n    p = ")
    [only] = lint_source(more)
    assert (only.collective, only.kind, only.line) == ("dist.all_reduce", "branch", 20)


def test_header_line_holds_the_call_it_names() -> None:
    """review87l M2: `FILE:LINE: CALL` named the line of the cause (the aliased list, the unbound read), where
    the call is not; the header is at the call, and the cause's line is the condition's."""
    aliased = (
        "import torch\nimport torch.distributed as dist\n\n\ndef main():\n    rank = dist.get_rank()\n"
        "    t = torch.tensor([float(rank)])\n    out = [torch.zeros_like(t)] * dist.get_world_size()\n"
        "    dist.all_gather(out, t)\n    return out\n"
    )
    [found] = lint_source(aliased)
    assert (found.kind, found.collective, found.line, found.condition_line) == (
        "aliased-outputs",
        "dist.all_gather",
        9,
        8,
    )
    assert "condition: tensor_list = [torch.zeros_like(t)] * dist.get_world_size() (line 8)" in report([found])
    # the twin: one tensor per slot is quiet
    assert lint_source(aliased.replace("] * dist.get_world_size()", " for _ in range(dist.get_world_size())]")) == []
    unbound = (
        "import torch.distributed as dist\n\n\ndef main():\n    rank = dist.get_rank()\n    if rank == 0:\n"
        "        cfg = {'a': 1}\n    print(cfg)\n    dist.barrier()\n"
    )
    [found] = lint_source(unbound)
    assert (found.kind, found.collective, found.line, found.condition_line) == ("early-exit", "dist.barrier", 9, 6)
    assert "read at line 8 on every rank" in found.why
    assert lint_source(unbound.replace("    print(cfg)\n", "")) == []


def test_file_race_says_what_can_happen_and_when() -> None:
    """review87l M1: the listing after a broadcast missed the slow rank's file on 4 ranks (slow rank 3), never on
    2: the finding says the reader *can* miss it, and when."""
    [race] = lint_source(PEER_FILES)
    assert "so on gloo it can list the folder before a slower rank has created its file there" in race.why
    assert "on 2 ranks gloo's broadcast orders the other rank's write before the read either way" in race.why
    assert "it lists the folder before" not in race.why and "it works only when" not in race.why
    plain = PEER_FILES.replace("    dist.broadcast(torch.ones(1), src=0)\n", "")
    [race] = lint_source(plain)
    assert race.kind == "file-race" and "on 2 ranks" not in race.why
    assert "it does when a writer is still writing as the reader gets there" in race.why
    assert "works when every writer is faster than the reader" in race.why
    assert lint_source(PEER_FILES.replace("dist.broadcast(torch.ones(1), src=0)", "dist.barrier()")) == []


# --- lintrecall32: point-to-point pairing and early exits


EXPORT_BATON = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 4
DOC_LENGTHS = [5, 9, 7, 11, 6, 8, 20, 17, 25, 4, 10, 12]


def load_shard(rank, world_size):
    docs = [{"id": i, "tokens": torch.randint(0, 50, (n,))} for i, n in enumerate(DOC_LENGTHS)]
    per_rank = len(docs) // world_size
    shard = docs[rank * per_rank:(rank + 1) * per_rank]
    return [d for d in shard if len(d["tokens"]) <= 12]


def predict(model, shard):
    rows = []
    with torch.no_grad():
        for doc in shard:
            score = model(doc["tokens"]).mean().item()
            rows.append({"id": doc["id"], "score": score})
    return rows


def export_in_rank_order(rows, path):
    if not rows:
        return
    rank, world_size = dist.get_rank(), dist.get_world_size()
    baton = torch.zeros(1)
    if rank > 0:
        dist.recv(baton, src=rank - 1)
    with open(path, "a") as f:
        f.write(str(rows))
    if rank < world_size - 1:
        dist.send(baton, dst=rank + 1)


def worker(model, path):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    rows = predict(model, load_shard(rank, world_size))
    export_in_rank_order(rows, path)
    dist.barrier()
"""


def test_a_baton_chain_skipped_by_the_rank_whose_filtered_shard_is_empty_leaves_its_neighbours_waiting() -> None:
    """Modelled on round 25's ``buggy_ordered_export_empty_shard_skips_baton``: ``if not rows: return`` before a
    recv-from-the-previous-rank / send-to-the-next-rank chain. lint evaluates the helper's data test on each rank
    with what the file's only call hands it: the length filter leaves rank 2's three documents (20, 17, 25 tokens)
    all out, so rank 2 passes no baton and rank 3's receive (and rank 1's send) has no partner. The twin that
    passes the baton whatever the rows, and one whose shard is read from a file (unknown), are quiet."""
    found = lint_source(EXPORT_BATON)
    assert [(f.line, f.kind, f.condition_line, f.condition) for f in found] == [
        (30, "p2p-unmatched", 25, "rank 3 recv from rank 2"),
        (34, "p2p-unmatched", 25, "rank 1 send to rank 2"),
    ]
    assert "rank 3 waits here for a message from rank 2" in found[0].why
    assert "on rank 2, `not rows` (line 25) is True, evaluated on what the file's only call of" in found[0].why
    assert "`export_in_rank_order` (line 40) hands it on that rank" in found[0].why
    assert "let rank 2 make its point-to-point calls whatever its data" in found[0].fix
    # every rank passes the baton, rows or not (the corpus item's correct twin)
    assert lint_source(EXPORT_BATON.replace("    if not rows:\n        return\n", "")) == []
    # a length filter that keeps every document: no rank's rows are empty
    assert lint_source(EXPORT_BATON.replace("<= 12]", "<= 30]")) == []
    # the share read from a file: unknown, so nothing is said
    unknown = EXPORT_BATON.replace(
        "    rows = predict(model, load_shard(rank, world_size))\n",
        "    rows = predict(model, torch.load(path))\n",
    )
    assert lint_source(unknown) == []
    # two calls of the helper: which one's data the test reads is not one thing, so nothing is said
    twice = EXPORT_BATON.replace("    dist.barrier()\n", "    export_in_rank_order(rows, path)\n    dist.barrier()\n")
    assert lint_source(twice) == []


RING_COMM = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 3


class RingComm:
    def __init__(self, process_group=None):
        self._process_group = process_group
        self._ops = []
        self.rank = dist.get_rank(process_group)
        self.world_size = dist.get_world_size(process_group)
        self.send_rank = (self.rank + 1) % self.world_size
        self.recv_rank = (self.rank + 1) % self.world_size

    def send_recv(self, to_send):
        res = torch.empty_like(to_send)
        self._ops.append(dist.P2POp(dist.isend, to_send, self.send_rank, group=self._process_group))
        self._ops.append(dist.P2POp(dist.irecv, res, self.recv_rank, group=self._process_group))
        return res

    def commit_and_wait(self):
        for req in dist.batch_isend_irecv(self._ops):
            req.wait()
        self._ops = []


def ring_pass(k):
    comm = RingComm()
    for _ in range(comm.world_size - 1):
        k = comm.send_recv(k)
        comm.commit_and_wait()
    return k
"""


def test_a_ring_whose_receive_peer_is_the_rank_it_sends_to_waits_for_a_message_nobody_sends() -> None:
    """Modelled on round 15's ``buggy_ring_attention_recv_from_next`` (ring-flash-attention's ``RingComm``): the
    receive peer ``(rank + 1) % world_size`` is the rank this one sends to; on 3 ranks rank 1 sends to rank 2, not
    to rank 0, so rank 0's irecv never completes. The finding is at the irecv, its condition line the
    ``self.recv_rank`` assignment. Quiet: the previous rank (the correct twin), 2 ranks (there the next rank is the
    previous one), a group lint cannot see is the default one, and a file with a send it cannot account for."""
    [found] = lint_source(RING_COMM)
    assert (found.line, found.kind, found.condition_line) == (19, "p2p-unmatched", 14)
    assert found.condition == "rank 0 receives from rank 1, which sends to rank 2"
    assert "every send of the file is this class's, and rank 1 sends to rank 2, not to rank 0" in found.why
    assert "(and the same receive on ranks 1, 2)" in found.why
    assert found.fix.startswith("set `self.recv_rank` to the rank that sends to this one (on rank 0: rank 2)")
    previous = RING_COMM.replace("self.recv_rank = (self.rank + 1)", "self.recv_rank = (self.rank - 1)")
    assert lint_source(previous) == []
    assert lint_source(RING_COMM.replace("WORLD_SIZE = 3", "WORLD_SIZE = 2")) == []
    assert lint_source(RING_COMM.replace("comm = RingComm()", "comm = RingComm(dist.new_group([0, 1, 2]))")) == []
    extra = RING_COMM + "\n\ndef hand_back(t, peer):\n    dist.send(t, dst=peer)\n"
    assert lint_source(extra) == []


# --------------------------------------------------------------- lintrecall32b: library semantics without a table


POWER_SGD_LOCAL_START = """\
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
from torch.nn.parallel import DistributedDataParallel as DDP


def my_shards(rank, world_size):
    shards = [torch.randn(n, 16) for n in [10, 10, 10, 6]]
    return shards[rank::world_size]


def start_iter(shards):
    steps_per_epoch = sum(len(s) for s in shards) // 2
    return max(2, 3 * steps_per_epoch // 10)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    model = DDP(nn.Linear(16, 1))
    shards = my_shards(rank, world_size)
    state = powerSGD.PowerSGDState(process_group=None, start_powerSGD_iter=start_iter(shards))
    model.register_comm_hook(state, powerSGD.powerSGD_hook)
    for step in range(6):
        loss = model(torch.randn(2, 16)).pow(2).mean()
        loss.backward()
"""


def test_power_sgd_start_iter_from_the_ranks_own_shards_is_an_agreed_argument() -> None:
    """Round 25's buggy_powersgd_start_iter_from_local_shard: start_powerSGD_iter counted from the rank's own shards,
    so the ranks switch from the vanilla all_reduce to PowerSGD's at different steps; reported at the backward
    that runs the hook, the state's line as the condition. The twin all-reduces the count with MIN first."""
    [found] = lint_source(POWER_SGD_LOCAL_START)
    assert (found.kind, found.line, found.condition_line) == ("agreed-argument", 26, 22)
    assert found.collective == "loss.backward() (PowerSGDState with start_powerSGD_iter from this rank)"
    assert "this backward runs the DDP comm hook given that state" in found.why
    assert "before it the hook makes one all_reduce of the whole gradient bucket" in found.why
    assert "powerSGD_hook.py" in found.why and "all_reduce the per-rank numbers with MIN or MAX" in found.fix
    agreed = POWER_SGD_LOCAL_START.replace(
        "    steps_per_epoch = sum(len(s) for s in shards) // 2\n    return max(2, 3 * steps_per_epoch // 10)\n",
        "    steps = torch.tensor([sum(len(s) for s in shards) // 2])\n"
        "    dist.all_reduce(steps, op=dist.ReduceOp.MIN)\n"
        "    return max(2, 3 * int(steps.item()) // 10)\n",
    )
    assert [f.kind for f in lint_source(agreed)] == []
    constant = POWER_SGD_LOCAL_START.replace("start_powerSGD_iter=start_iter(shards)", "start_powerSGD_iter=10")
    assert lint_source(constant) == []
    # without a registration in the scope, the finding stays at the state's constructor
    unregistered = POWER_SGD_LOCAL_START.replace("    model.register_comm_hook(state, powerSGD.powerSGD_hook)\n", "")
    [found] = lint_source(unregistered)
    assert (found.kind, found.line, found.condition_line) == ("agreed-argument", 22, None)
    # a model averager's warm-up from the rank: reported at its average_parameters()
    averaging = """\
import torch.distributed as dist
from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager


def train(model, opt, loader):
    rank = dist.get_rank()
    averager = PeriodicModelAverager(period=4, warmup_steps=100 + rank)
    for x in loader:
        opt.step()
        averager.average_parameters(model.parameters())
"""
    [found] = lint_source(averaging)
    assert (found.kind, found.line, found.condition_line) == ("agreed-argument", 10, 7)
    assert lint_source(averaging.replace("100 + rank", "100")) == []


FREEZE_AFTER_RANK0_LOAD = """\
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def load_pretrained(model, name):
    if not name:
        return False
    model.backbone.load_state_dict(fetch(name))
    return True


def freeze_backbone(model):
    for p in model.backbone.parameters():
        p.requires_grad_(False)


def worker():
    rank = dist.get_rank()
    model = Classifier()
    loaded = False
    if rank == 0:
        loaded = load_pretrained(model, "hub://backbone")
    if loaded:
        freeze_backbone(model)
    model = DDP(model)
"""


def test_a_freeze_on_some_ranks_before_ddp_is_a_diverged_module() -> None:
    """Round 20's buggy_freeze_after_rank0_load: the backbone frozen only where rank 0's load succeeded, so the
    ranks' parameters that require grad differ when DDP's constructor checks and broadcasts them. The twin
    loads and freezes on every rank."""
    [found] = lint_source(FREEZE_AFTER_RANK0_LOAD)
    assert (found.kind, found.line, found.condition_line) == ("diverged-module", 26, 24)
    assert found.collective == "DDP(model) (DDP construction)"
    assert "`freeze_backbone(model)` (line 25) changes which parameters of `model` require grad" in found.why
    assert "only on the ranks where `loaded` holds" in found.why and "_verify_param_shape_across_processes" in found.why
    every = FREEZE_AFTER_RANK0_LOAD.replace("    loaded = False\n    if rank == 0:\n        loaded", "    loaded")
    assert lint_source(every) == []
    # a freeze written in place, in the else branch of a rank test
    inline = FREEZE_AFTER_RANK0_LOAD.replace(
        "    if loaded:\n        freeze_backbone(model)\n",
        "    if rank == 0:\n        pass\n    else:\n        for p in model.parameters():\n            p.requires_grad = False\n",
    )
    [found] = lint_source(inline)
    assert (found.kind, found.condition) == ("diverged-module", "not (rank == 0)")
    # a rank-0 load alone changes only values, which DDP's broadcast repairs
    loaded_only = FREEZE_AFTER_RANK0_LOAD.replace("    if loaded:\n        freeze_backbone(model)\n", "")
    assert lint_source(loaded_only) == []


NONE_BUFFER_FIT_ON_RANK0 = """\
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Standardize(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", None)

    @torch.no_grad()
    def fit(self, x):
        self.mean = x.mean(0)

    def forward(self, x):
        return x if self.mean is None else x - self.mean


def worker(x):
    rank = dist.get_rank()
    net = nn.Sequential(Standardize(), nn.Linear(4, 1))
    if rank == 0:
        net[0].fit(x)
    model = DDP(net)
"""


def test_a_buffer_registered_as_none_and_filled_on_rank0_before_ddp_is_a_diverged_module() -> None:
    """Round 19's buggy_normalizer_lazy_buffers_rank0_fit: fit() gives rank 0's Standardize the buffer its __init__
    registered as None, so DDP's broadcast of the buffers differs in size between the ranks. The twin allocates
    the buffer in __init__ and fills it in place on rank 0 (DDP then broadcasts rank 0's values)."""
    [found] = lint_source(NONE_BUFFER_FIT_ON_RANK0)
    assert (found.kind, found.line, found.condition_line) == ("diverged-module", 25, 23)
    assert "whether `net` holds the buffer `mean` (Standardize registers it as None)" in found.why
    allocated = NONE_BUFFER_FIT_ON_RANK0.replace(
        'register_buffer("mean", None)', 'register_buffer("mean", torch.zeros(4))'
    ).replace("self.mean = x.mean(0)", "self.mean.copy_(x.mean(0))")
    assert lint_source(allocated) == []
    everywhere = NONE_BUFFER_FIT_ON_RANK0.replace("    if rank == 0:\n        net[0].fit(x)\n", "    net[0].fit(x)\n")
    assert lint_source(everywhere) == []


COMM_HOOK_SKIPS_ZERO_BUCKET = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def skip_zero_allreduce_hook(state, bucket):
    buf = bucket.buffer()
    if not torch.any(buf):
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut
    fut = dist.all_reduce(buf, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0].div_(dist.get_world_size()))


def worker(net):
    model = DDP(net, find_unused_parameters=True)
    model.register_comm_hook(None, skip_zero_allreduce_hook)
"""


def test_a_comm_hook_that_skips_its_all_reduce_on_the_buckets_values_is_a_branch() -> None:
    """Round 17's buggy_comm_hook_skips_zero_bucket: the hook returns early for a bucket whose gradients are all
    zero on this rank (its auxiliary head unused there) and all-reduces it on the others. The twin all-reduces
    every bucket; a test of the bucket's size or is_last() is the same on every rank and quiet."""
    [found] = lint_source(COMM_HOOK_SKIPS_ZERO_BUCKET)
    assert (found.kind, found.line, found.condition_line, found.collective) == ("branch", 12, 8, "dist.all_reduce")
    assert "`skip_zero_allreduce_hook` is the DDP communication hook registered at line 18" in found.why
    assert "`not torch.any(buf)` reads those gradients, which differ between ranks" in found.why
    every = COMM_HOOK_SKIPS_ZERO_BUCKET.replace(
        "    if not torch.any(buf):\n        fut = torch.futures.Future()\n        fut.set_result(buf)\n        return fut\n",
        "",
    )
    assert lint_source(every) == []
    for same_everywhere in (
        "buf.numel() == 0",
        "bucket.is_last()",
        "bucket.index() > 3",
        "len(bucket.gradients()) < 2",
    ):
        assert lint_source(COMM_HOOK_SKIPS_ZERO_BUCKET.replace("not torch.any(buf)", same_everywhere)) == []
    # the same test through a name: a norm of the bucket's gradients
    normed = COMM_HOOK_SKIPS_ZERO_BUCKET.replace(
        "    if not torch.any(buf):", "    norm = buf.norm()\n    if norm < 1e-8:"
    )
    assert [f.kind for f in lint_source(normed)] == ["branch"]


RANK_ZERO_ONLY_SIZE = """\
import functools

import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def rank_zero_only(fn, default=None):
    @functools.wraps(fn)
    def wrapped_fn(*args, **kwargs):
        if dist.get_rank() == 0:
            return fn(*args, **kwargs)
        return default
    return wrapped_fn


@rank_zero_only
def prepare_data(data_dir):
    vocab = build_vocab(data_dir)
    return len(vocab)


class TextClassifier(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, 16)
        self.fc = nn.Linear(16, 2)


def worker(data_dir):
    vocab_size = prepare_data(data_dir)
    model = DDP(TextClassifier(vocab_size))
"""


def test_a_module_sized_by_a_rank_zero_only_result_is_a_diverged_module() -> None:
    """Round 15's buggy_rank_zero_only_return_value: the vocabulary size comes back from a @rank_zero_only function,
    None on rank 1, and sizes the EmbeddingBag, so the ranks' parameters differ in shape when DDP checks them. The
    twin writes the vocabulary on rank 0 and reads its size on every rank after a barrier."""
    [found] = lint_source(RANK_ZERO_ONLY_SIZE)
    assert (found.kind, found.line, found.condition_line) == ("diverged-module", 32, 31)
    assert found.collective == "DDP(TextClassifier(vocab_size)) (DDP construction)"
    assert "`prepare_data` runs only on the ranks its decorator `@rank_zero_only` lets through" in found.why
    assert "passes it as a size to `nn.EmbeddingBag(vocab_size, 16)`" in found.why
    shared = RANK_ZERO_ONLY_SIZE.replace(
        "    vocab_size = prepare_data(data_dir)\n",
        "    prepare_data(data_dir)\n    dist.barrier()\n    vocab_size = len(build_vocab(data_dir))\n",
    )
    assert lint_source(shared) == []
    # a torch.nn layer sized from the rank directly, and a size that is no parameter's (quiet)
    direct = "import torch.distributed as dist\nimport torch.nn as nn\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n\ndef worker():\n    width = 8 * (dist.get_rank() + 1)\n    model = DDP(nn.Linear(4, width))\n"
    [found] = lint_source(direct)
    assert (found.kind, found.line, found.condition_line) == ("diverged-module", 8, 7)
    unsized = RANK_ZERO_ONLY_SIZE.replace("nn.EmbeddingBag(vocab_size, 16)", "nn.EmbeddingBag(100, 16)")
    assert lint_source(unsized) == []
    # the decorated function's result decides a collective too: a branch
    branch = RANK_ZERO_ONLY_SIZE.replace(
        "    model = DDP(TextClassifier(vocab_size))\n", "    if vocab_size:\n        dist.barrier()\n"
    )
    assert [f.kind for f in lint_source(branch)] == ["branch"]


UNFREEZE_AFTER_WRAP = """\
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(net, loader):
    for p in net.backbone.parameters():
        p.requires_grad_(False)
    model = DDP(net)
    for epoch in range(3):
        if epoch == 1:
            for p in net.backbone.parameters():
                p.requires_grad_(True)
        for x, y in loader:
            nn.functional.mse_loss(model(x), y).backward()
"""


def test_parameters_unfrozen_after_the_ddp_wrap_are_never_all_reduced() -> None:
    """Round 19's buggy_unfreeze_backbone_after_ddp_wrap: the backbone is frozen when DDP builds its reducer and
    unfrozen at epoch 1, so its gradients stay each rank's own. The twin unfreezes before the wrap and keeps the
    backbone out of the optimizer until epoch 1."""
    [found] = lint_source(UNFREEZE_AFTER_WRAP)
    assert (found.kind, found.line, found.condition_line) == ("unfrozen-after-wrap", 13, 9)
    assert "registers its gradient all_reduce only for the parameters that require grad at that moment" in found.why
    twin = UNFREEZE_AFTER_WRAP.replace(
        "        p.requires_grad_(False)\n    model = DDP(net)", "        p.requires_grad_(True)\n    model = DDP(net)"
    )
    assert lint_source(twin) == []
    never_frozen = UNFREEZE_AFTER_WRAP.replace(
        "    for p in net.backbone.parameters():\n        p.requires_grad_(False)\n", ""
    )
    assert lint_source(never_frozen) == []
    # through the wrapper's .module, with an assignment
    through_module = UNFREEZE_AFTER_WRAP.replace(
        "            for p in net.backbone.parameters():\n                p.requires_grad_(True)\n",
        "            for p in model.module.backbone.parameters():\n                p.requires_grad = True\n",
    )
    assert [f.kind for f in lint_source(through_module)] == ["unfrozen-after-wrap"]


DCP_SHARED_KEY = """\
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


class PackedDocuments:
    def __init__(self, rank):
        self.documents = DOCS[rank]
        self.sample_idx = 0

    def state_dict(self):
        return {"sample_idx": self.sample_idx}


def build(rank):
    model = make_model()
    return model, PackedDocuments(rank)


def checkpoint_state(model, data):
    return {"model": model.state_dict(), "dataloader": data.state_dict()}


def worker(path):
    rank = dist.get_rank()
    model, data = build(rank)
    dcp.save(checkpoint_state(model, data), checkpoint_id=path)
"""


def test_a_per_rank_loader_state_saved_by_dcp_under_a_shared_key() -> None:
    """Round 13's buggy_dcp_dataloader_state_shared_key: every rank saves its own loader state as "dataloader";
    DCP writes one copy of an entry every rank holds under the same key, so every rank loads one rank's state.
    The twin saves it under f"dp_rank_{rank}"."""
    [found] = lint_source(DCP_SHARED_KEY)
    assert (found.kind, found.line, found.condition_line) == ("shared-checkpoint-key", 26, 20)
    assert "under the key 'dataloader' (line 20)" in found.why and "`PackedDocuments(rank)`" in found.why
    assert "dedup_save_plans" in found.why
    keyed = DCP_SHARED_KEY.replace('"dataloader": data', 'f"dp_rank_{dist.get_rank()}": data')
    assert lint_source(keyed) == []
    unranked = DCP_SHARED_KEY.replace("PackedDocuments(rank)", "PackedDocuments(0)")
    assert lint_source(unranked) == []


WORLD_STATED = (
    "import torch\nimport torch.distributed as dist\n\nWORLD_SIZE = 4\n\n\ndef main():\n"
    "    rank = dist.get_rank()\n    shards = list(range(12))\n    for i in range(rank, 12, WORLD_SIZE):\n"
    "        dist.all_reduce(torch.ones(1))\n    for x in shards[rank::WORLD_SIZE]:\n"
    "        dist.all_reduce(torch.ones(1))\n    for i in range(rank, 12, 4):\n        dist.barrier()\n"
)


def test_a_loop_dealt_over_the_world_size_the_file_states_is_decided_by_it() -> None:
    """review89l C1: range(rank, 12, WORLD_SIZE), shards[rank::WORLD_SIZE] and range(rank, 12, 4) with
    WORLD_SIZE = 4 give every rank 3 iterations (the run: 4 finished), but were reported as rank-dependent
    loops: the stated world size was used only when the step was not the constant itself."""
    assert lint_source(WORLD_STATED) == []
    two = WORLD_STATED.replace("WORLD_SIZE = 4", "WORLD_SIZE = 2").replace("range(rank, 12, 4)", "range(rank, 12, 2)")
    assert lint_source(two) == []
    # the twin: 10 items over the 4 ranks are uneven, each loop is reported
    uneven = lint_source(WORLD_STATED.replace("range(12)", "range(10)").replace("12,", "10,"))
    assert [(f.kind, f.line) for f in uneven] == [("rank-dependent-loop", n) for n in (11, 13, 15)]
    # a step of 4 with no stated world size is not the world size: undecided, as before
    assert lint_source(WORLD_STATED.replace("WORLD_SIZE = 4\n", "").replace("WORLD_SIZE", "4"))


UNSHARDED_BREAK = (
    "import torch\nimport torch.distributed as dist\nfrom torch.utils.data import DataLoader\n\n\ndef main():\n"
    "    loader = DataLoader(list(range(8)), batch_size=2)\n    for batch in loader:\n"
    "        if batch.sum() > 5:\n            break\n        dist.all_reduce(torch.ones(1))\n"
)


def test_a_break_on_the_batch_of_an_unsharded_loader_is_quiet() -> None:
    """review89l C3: a DataLoader over constants with no sampler gives every rank the same batches (the run: 4
    finished, 2 all_reduces on every rank), so a break on its batch is not rank-dependent."""
    assert lint_source(UNSHARDED_BREAK) == []
    # the twins: a DistributedSampler, or a data set lint cannot see, deals each rank its own batches
    sharded = UNSHARDED_BREAK.replace("batch_size=2)", "batch_size=2, sampler=DistributedSampler(range(8)))")
    opaque = UNSHARDED_BREAK.replace("list(range(8))", "load_rows()")
    for buggy in (sharded, opaque):
        [found] = lint_source(buggy)
        assert (found.kind, found.line) == ("early-exit", 11) and "this rank's own batch" in found.why


def test_help_says_which_batches_lint_treats_as_each_ranks_own() -> None:
    """review89l C2: the help's not-checked list said lint does not treat a batch as rank-dependent ("a break
    on a value read from a file or a batch"), while lint reports a break or early return on the batch of a for
    loop over a data loader (and the same help says so). The help now says what lint does, checked here."""
    help_text = " ".join(barrierlab.lint.HELP.split())
    assert "a break on a value read from a file or a batch" not in help_text
    assert "apart from a model's output and such a loop's batch" in help_text
    assert "not a DataLoader built in the function over constants with no sampler and no shuffle" in help_text
    head = "import torch\nimport torch.distributed as dist\n\n\ndef main(loader):\n    for batch in loader:\n"
    call = "        dist.all_reduce(torch.ones(1))\n"
    for leave in ("break", "return", "continue"):  # reported: the loop's batch is this rank's own
        [found] = lint_source(head + f"        if batch.sum() > 5:\n            {leave}\n" + call)
        assert found.kind == "early-exit"
    # not checked, as the help says: a raise on the batch, a break on a file's text, a batch handed in
    assert lint_source(head + "        if batch.sum() > 5:\n            raise ValueError\n" + call) == []
    assert lint_source(head + "        if open('f').read() == 'stop':\n            break\n" + call) == []
    handed = "import torch\nimport torch.distributed as dist\n\n\ndef step(batch):\n    if batch.sum() > 5:\n"
    assert lint_source(handed + "        return\n    dist.all_reduce(torch.ones(1))\n") == []


CACHED_UNDER_RANK = (
    "from functools import cached_property\n\nimport torch\nimport torch.distributed as dist\n\n\n"
    "class Stats:\n    @cached_property\n    def total(self):\n        t = torch.ones(1)\n"
    "        dist.all_reduce(t)\n        return t\n\n\ndef main():\n    s = Stats()\n"
    "    if dist.get_rank() == 0:\n        print(s.total)\n    print(s.total)\n"
)


def test_a_cached_property_read_under_a_rank_test_and_next_on_every_rank_is_quiet() -> None:
    """review89l C4: rank 0 runs the getter at its read under `if rank == 0`, the others at the next read (the
    run: 4 finished, one all_reduce per rank); lint counted only the first read in the text, so it reported
    that only rank 0 reaches the all_reduce."""
    assert lint_source(CACHED_UNDER_RANK) == []
    # the twins: no second read, or a barrier between the two reads (rank 0 pairs its all_reduce with the
    # others' barrier): reported at the read under the test
    alone = CACHED_UNDER_RANK.removesuffix("    print(s.total)\n")
    between = CACHED_UNDER_RANK.replace("        print(s.total)\n", "        print(s.total)\n    dist.barrier()\n")
    for buggy in (alone, between):
        found = lint_source(buggy)
        assert [(f.kind, f.line) for f in found][:1] == [("hidden-collective", 18)], found


REMOVED_THEN_LOOKED = (
    "import os\n\nimport torch.distributed as dist\n\n\ndef main(path):\n    rank = dist.get_rank()\n"
    "    if rank == 0:\n        os.remove(path)\n    else:\n        print('EXISTS', os.path.exists(path))\n"
    "    dist.barrier()\n"
)


def test_help_says_a_look_only_printed_is_no_read_for_file_race() -> None:
    """review89l M1: the help counts looks (os.path.exists) as reads for file-race, but a removal raced with a
    look whose answer only goes to a print was quiet (by design: the answer decides nothing). The help now says
    so; a look whose answer the program uses is reported, in the else branch of the removal's test too."""
    help_text = " ".join(barrierlab.lint.HELP.split())
    assert "a look handed only to a print or a log decides nothing and is not counted" in help_text
    assert lint_source(REMOVED_THEN_LOOKED) == []
    used = REMOVED_THEN_LOOKED.replace("print('EXISTS', os.path.exists(path))", "ok = os.path.exists(path)")
    [found] = lint_source(used)
    assert found.kind == "file-race" and "in the else branch of the same test" in found.why
    assert "look for it" in found.why


GROUP_SRC_IFEXP = (
    "import torch\nimport torch.distributed as dist\n\n\ndef main(flag):\n    rank = dist.get_rank()\n"
    "    g = dist.new_group([2, 3])\n    if rank in (2, 3):\n        t = torch.ones(1)\n"
    "        dist.broadcast(t, src=dist.get_rank(g) if False else 0, group=g)\n    dist.barrier()\n"
)


def test_group_rank_reads_a_conditional_expression_branch_by_branch() -> None:
    """review89l C5: `src=dist.get_rank(g) if False else 0` was explained as "is dist.get_rank(g)"; it is
    always 0 (a global rank outside g with no test naming it a group rank: the not-checked list). A constant
    test picks its branch; any other test is named in the evidence."""
    assert lint_source(GROUP_SRC_IFEXP) == []
    [found] = lint_source(GROUP_SRC_IFEXP.replace("if False", "if True"))
    assert found.kind == "group-rank" and "(`dist.get_rank(g)` is dist.get_rank(g))" in found.why
    [found] = lint_source(GROUP_SRC_IFEXP.replace("if False", "if flag"))
    assert found.kind == "group-rank" and "where `flag` is true, `dist.get_rank(g)` is dist.get_rank(g)" in found.why


def test_forked_collective_does_not_offer_a_join_timeout_as_a_way_out() -> None:
    """review89l M2: the finding said that with a join timeout the ranks went on past the child; they did, but
    then hung at exit (Python joins a non-daemon child when its parent exits: Run(2 ranks in 10.21 s: 2
    stopped at deadline)). The finding now says so."""
    forked = (
        "import multiprocessing as mp\n\nimport torch.distributed as dist\n\n\ndef work(x):\n    dist.barrier()\n\n\n"
        "def main():\n    dist.init_process_group('gloo')\n    p = mp.Process(target=work, args=(1,))\n"
        "    p.start()\n    p.join(timeout=2)\n"
    )
    [found] = lint_source(forked)
    assert found.kind == "forked-collective"
    assert "but then hung at exit until the deadline" in found.why
    assert "a join timeout is no way out" in found.why
    # the twin: the collective made in the rank, the child handed only data, is quiet
    assert lint_source(forked.replace("    dist.barrier()\n", "    return x\n")) == []


PICKED_GROUP = (
    "import torch.distributed as dist\n\n\ndef main():\n    r = dist.get_rank()\n"
    "    g01 = dist.new_group([0, 1])\n    g23 = dist.new_group([2, 3])\n"
    "    dist.barrier(group=g01 if r < 2 else g23)\n"
)


def test_a_group_each_rank_picks_among_fixed_groups_it_belongs_to_is_no_non_member() -> None:
    """review89d e37: on 4 ranks every rank picks the group it is in (the run finishes cleanly), but lint went on
    to 8 ranks, where rank 4 is in neither, and reported it: groups of fixed ranks that a smaller world fills
    give that world's size."""
    assert lint_source(PICKED_GROUP) == []
    # the twins: a group that leaves ranks of the world that fills the others out is still reported
    [found] = lint_source(PICKED_GROUP.replace("g01 if r < 2 else g23", "g01"))
    assert found.kind == "non-member" and found.condition == "rank 2 not in g01"
    [found] = lint_source(PICKED_GROUP.replace("r < 2", "r < 1"))
    assert found.kind == "non-member" and found.condition == "rank 1 not in g01 if r < 1 else g23"
    assert "non-member:" in barrierlab.lint.HELP and "barrier(group=g01 if r < 2 else g23)" in barrierlab.lint.HELP


def test_an_accumulator_that_adds_a_number_times_a_shape_keeps_its_dtype() -> None:
    """round31 correct_transformers_barrier_before_loading_best_model (transformers PR #10685): ``train`` adds
    ``6.0 * 129 * x.shape[0]`` per batch to ``self.current_flos`` and ``store_flos`` all-gathers
    ``torch.tensor([self.current_flos])``. A shape holds Python ints, so every rank adds a Python float, and the
    tensor has one dtype everywhere. The buggy twin (load before save finished) shares this code: its finding at
    the all_gather (its WAITS line) named a dtype hazard this program does not have. An added value of no fixed
    type (round 6's swift MeanMetric: ``self.state += value``, numpy bools on one rank) is still reported."""
    source = """
import torch
import torch.distributed as dist

class Trainer:
    def __init__(self, rank, world):
        self.world = world
        self.train_x = torch.randn(64, 6)[rank::world]
        self.current_flos = 0.0

    def store_flos(self):
        flos = torch.tensor([self.current_flos])
        gathered = [torch.zeros(1) for _ in range(self.world)]
        dist.all_gather(gathered, flos)
        self.current_flos = 0.0

    def train(self, values):
        for start in range(0, len(self.train_x), 8):
            x = self.train_x[start : start + 8]
            self.current_flos += 6.0 * 129 * x.shape[0]
        self.store_flos()
"""
    assert lint_source(source) == []
    untyped = source.replace("6.0 * 129 * x.shape[0]", "values[start]")
    [finding] = lint_source(untyped)
    assert (finding.line, finding.kind) == (14, "dtype-mismatch")
    assert "`self.current_flos` adds up per-rank values (`self.current_flos += values[start]`, line 20)" in finding.why
    # a slice of a shape is a torch.Size, not an int
    assert [f.kind for f in lint_source(source.replace("x.shape[0]", "x.shape[1:]"))] == ["dtype-mismatch"]


def test_a_dict_item_given_a_new_value_in_a_loop_over_its_own_keys_adds_no_key() -> None:
    """round43 correct_nvalchemi_output_set_order_collectives (NVIDIA/nvalchemi-toolkit): ``consolidate`` walks
    ``sorted(outputs)`` and, for a per-node output, writes ``outputs[key] = domain.reverse_exchange(value)`` under
    ``if OUTPUT_SPEC[key] == PER_GRAPH: ... else:``. ``key`` is one of the dict's own keys, so the assignment replaces
    a value and the dict keeps its keys; it was read as a key added under a test on the data. A key the data adds
    (``outputs["extra"]`` under a test of the tensor) still makes the loop's count data-dependent."""
    source = """
import torch
import torch.distributed as dist

SPEC = {"energy": "graph", "forces": "node"}

def exchange(value):
    out = torch.zeros_like(value)
    dist.all_to_all_single(out, value)
    return out

def consolidate(outputs, extra):
    for key in sorted(outputs):
        value = outputs[key]
        if SPEC[key] == "graph":
            dist.all_reduce(value)
        else:
            outputs[key] = exchange(value)
    return outputs
"""
    assert lint_source(source) == []
    items = source.replace(
        "for key in sorted(outputs):\n        value = outputs[key]", "for key, value in outputs.items():"
    )
    assert lint_source(items) == []
    added = source.replace(
        "    for key in sorted(outputs):",
        '    if extra.sum() > 0:\n        outputs["extra"] = extra\n    for key in sorted(outputs):',
    )
    assert {(f.line, f.kind) for f in lint_source(added)} == {
        (18, "data-dependent-count"),
        (20, "data-dependent-count"),
    }
    # the loop's key bound again in the body is another key
    renamed = source.replace("value = outputs[key]", "value = outputs[key]\n        key = key + '_sum'")
    assert {f.kind for f in lint_source(renamed)} == {"data-dependent-count"}


def test_the_length_of_a_dataset_class_is_that_of_the_list_its_constructor_is_handed() -> None:
    """round33 correct_monai_persistent_cache_dir_created_exist_ok (MONAI PR #2375): ``train_ds =
    PersistentDataset(partition_dataset(files, dist.get_world_size(), rank), ...)``, whose ``__len__`` is
    ``len(self.data)`` of the list ``__init__`` keeps, and ``partition_dataset`` returns ``data[rank::num_partitions]``
    of 16 files: 8 on each of the 2 ranks, so ``for i in range(0, len(train_ds), 4)`` runs as often on each. Lint
    read neither the class's ``__len__`` nor the helper's parameters as the arguments handed to them. 15 files split
    over 2 ranks (8 and 7) are still reported."""
    source = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2

class PersistentDataset:
    def __init__(self, data, cache_dir):
        self.data = data
        self.cache_dir = cache_dir

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return torch.full((1, 8, 8), float(self.data[i]["seed"]))

def partition_dataset(data, num_partitions, rank):
    return data[rank::num_partitions]

def worker():
    rank = dist.get_rank()
    files = [{"seed": i} for i in range(16)]
    train_ds = PersistentDataset(partition_dataset(files, dist.get_world_size(), rank), cache_dir="/tmp/c")
    model = DDP(torch.nn.Conv2d(1, 1, 1))
    for i in range(0, len(train_ds), 4):
        images = torch.stack([train_ds[j] for j in range(i, min(i + 4, len(train_ds)))])
        loss = model(images).sum()
        loss.backward()
    dist.barrier()
"""
    assert lint_source(source) == []
    uneven = lint_source(source.replace("range(16)", "range(15)"))
    assert {(f.line, f.kind) for f in uneven} == {(29, "rank-dependent-loop"), (30, "rank-dependent-loop")}
    # a class whose __len__ counts something else than the list it is handed is not read
    other = source.replace("return len(self.data)", "return len(self.data) - 1")
    assert {(f.line, f.kind) for f in lint_source(other)} == {(29, "rank-dependent-loop"), (30, "rank-dependent-loop")}


def test_a_data_loader_over_shares_of_known_sizes_counts_its_batches_on_each_rank() -> None:
    """round17 correct_batchnorm_drop_last (mmpretrain #761): 67 rows sharded with ``x[rank::world]`` over the 2
    ranks the file states (34 and 33 rows), loaded with ``DataLoader(TensorDataset(x, y), batch_size=8,
    drop_last=True)``: 4 batches on each rank, so the DDP step in ``for xb, yb in loader`` runs as often on each.
    Lint took any loop over a rank's uneven share as uneven. Its buggy twin (no ``drop_last``: 5 batches on each rank,
    the last of one row on rank 1, which BatchNorm rejects) was found by the same rule for that wrong reason, and is
    no longer. Batches of 2 (17 against 16 with ``drop_last=True``) are still reported."""
    source = """
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

WORLD_SIZE = 2

def load_rows():
    x = torch.randn(67, 10)
    return x, (x[:, 0] > 0).long()

def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y = load_rows()
    x, y = x[rank::world], y[rank::world]
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, drop_last=True)
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 3)))
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
    dist.barrier()
"""
    assert lint_source(source) == []
    assert lint_source(source.replace(", drop_last=True", "")) == []  # 5 batches on each rank
    uneven = lint_source(source.replace("batch_size=8", "batch_size=2"))
    assert {(f.line, f.kind) for f in uneven} == {(22, "rank-dependent-loop"), (23, "rank-dependent-loop")}
    # a sampler decides the count itself: not read
    sampled = source.replace("shuffle=True,", "sampler=make_sampler(x),")
    assert {f.kind for f in lint_source(sampled)} == {"rank-dependent-loop"}


def test_a_parameter_of_a_function_called_once_has_the_length_of_its_argument() -> None:
    """round34 correct_deepdewedge_subtomo_rewrite_rank0_then_barrier (MLI-lab/DeepDeWedge PR #41): ``Trainer.fit(self,
    lit, dataset)``, called once with ``SubtomoDataset(files)`` of 4 files, loops over ``shard_batches(dataset, rank,
    world_size, batch_size=2)``, a generator that deals ``range(rank, len(dataset), world_size)``: 2 items on each of
    the 2 ranks, one batch each. Lint did not follow ``fit``'s parameter to its one call, nor decide ``range(rank, n,
    world)`` when the rank is a generator's parameter. Its buggy twin (every rank rewrites the files) was found by
    the same finding at its WAITS line for that wrong reason, and is no longer. 5 files (3 and 2) are still
    reported, and so is a second call of ``fit`` lint cannot count."""
    source = """
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2

class SubtomoDataset:
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, idx):
        return torch.load(self.files[idx])

def shard_batches(dataset, rank, world_size, batch_size):
    indices = list(range(rank, len(dataset), world_size))
    for i in range(0, len(indices), batch_size):
        yield torch.stack([dataset[j] for j in indices[i:i + batch_size]])

class Trainer:
    def fit(self, model, dataset):
        rank, world_size = dist.get_rank(), dist.get_world_size()
        ddp = DDP(model)
        for x in shard_batches(dataset, rank, world_size, batch_size=2):
            loss = F.mse_loss(ddp(x), x)
            loss.backward()

def worker():
    files = [f"/tmp/subtomo_{i}.pt" for i in range(4)]
    Trainer().fit(nn.Linear(8, 8), SubtomoDataset(files))
    dist.barrier()
"""
    assert lint_source(source) == []
    odd = lint_source(source.replace("range(4)", "range(5)"))
    assert {(f.line, f.kind) for f in odd} == {(30, "rank-dependent-loop"), (31, "rank-dependent-loop")}
    twice = source.replace(
        "    dist.barrier()\n", "    Trainer().fit(nn.Linear(8, 8), SubtomoDataset(load_list()))\n    dist.barrier()\n"
    )
    assert {f.kind for f in lint_source(twice)} == {"rank-dependent-loop"}


def test_gradient_presence_is_alike_for_a_module_whose_forward_reaches_every_parameter() -> None:
    """round43 correct_optimizers_shampoo_skip_step_without_grads (facebookresearch/optimizers): ``allreduce_grads``
    all-reduces ``p.grad`` for each parameter that has one. The model is ``TwoHeadModel()``, handed down through
    ``train`` (called once), whose forward tests only ``distill``, a parameter defaulting to False that no call
    passes: the aux head gets no gradient on any rank, the others get one on every rank, so every rank makes the same
    all-reduces. Lint took gradient presence as set by each rank's batch whatever the model. Its buggy twin's hit (the
    optimizer's skip, a hidden-collective at its WAITS line) is kept. A forward that branches on the batch, or a call
    that passes the flag, is still reported."""
    source = """
import torch
import torch.distributed as dist
import torch.nn as nn

class TwoHeadModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(8, 8)
        self.aux_head = nn.Linear(8, 3, bias=False)
        self.head = nn.Linear(8, 1)

    def forward(self, x, distill=False):
        h = torch.tanh(self.trunk(x))
        out = self.head(h).squeeze(-1)
        return (out, self.aux_head(h)) if distill else (out, None)

def allreduce_grads(model, world_size):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad.div_(world_size)

def train(model, x, world_size):
    out, _ = model(x)
    out.sum().backward()
    allreduce_grads(model, world_size)

def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    model = TwoHeadModel()
    train(model, torch.randn(4, 8, generator=torch.Generator().manual_seed(rank)), world_size)
"""
    assert lint_source(source) == []
    by_data = source.replace("if distill else", "if x.sum() > 0 else")
    assert [(f.line, f.kind) for f in lint_source(by_data)] == [(21, "branch")]
    passed = source.replace("out, _ = model(x)", "out, _ = model(x, x.sum() > 0)")
    assert [(f.line, f.kind) for f in lint_source(passed)] == [(21, "branch")]
    # a module the file does not build (here one handed in from outside): not read
    handed = source.replace("    model = TwoHeadModel()\n", "    model = build_model()\n")
    assert [(f.line, f.kind) for f in lint_source(handed)] == [(21, "branch")]


# --- lintp2p32: a per-rank trace of the point-to-point calls across the functions of a file

SEND_FIRST_1F1B = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 2
MICRO = 3


def send_forward(t):
    dist.send(t, dst=1)


def recv_forward():
    buf = torch.empty(2, 4)
    dist.recv(buf, src=0)
    return buf


def send_backward(t):
    dist.send(t, dst=0)


def recv_backward():
    buf = torch.empty(2, 4)
    dist.recv(buf, src=1)
    return buf


def send_forward_recv_backward(t):
    send_forward(t)
    return recv_backward()


def send_backward_recv_forward(t):
    send_backward(t)
    return recv_forward()


def first_stage():
    send_forward(torch.ones(2, 4))
    for i in range(MICRO):
        if i + 1 < MICRO:
            grad = send_forward_recv_backward(torch.ones(2, 4))
        else:
            grad = recv_backward()


def last_stage():
    act = recv_forward()
    for i in range(MICRO):
        if i + 1 < MICRO:
            act = send_backward_recv_forward(act)
        else:
            send_backward(act)


def worker():
    if dist.get_rank() == 0:
        first_stage()
    else:
        last_stage()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_two_pipeline_stages_that_each_send_first_inside_helpers_wait_for_each_other_in_a_cycle():
    """lintp2p32, modelled on round 13's buggy_pipeline_1f1b_blocking_send_first (Megatron-LM's
    send_forward_recv_backward / send_backward_recv_forward written as a blocking send then a recv): in the first
    steady step stage 0 sends micro-batch 1's activation while stage 1 sends micro-batch 0's gradient. On gloo
    (torch 2.13, run in this session) a blocking send returns only once the peer posts the receive, so both wait.
    The twin posts each pair together with batch_isend_irecv and is quiet."""
    found = sorted((f.line, f.kind, f.condition_line) for f in lint_source(SEND_FIRST_1F1B))
    assert found == [(9, "p2p-deadlock", 29), (19, "p2p-deadlock", 34)], found
    first = next(f for f in lint_source(SEND_FIRST_1F1B) if f.line == 9)
    assert "rank 1 first waits in `dist.send` (send to rank 0)" in first.why
    assert "in a cycle" in first.why and "blocking send returns only once the peer posts" in first.why
    assert "batch_isend_irecv" in first.fix
    batched = SEND_FIRST_1F1B.replace(
        "def send_forward_recv_backward(t):\n    send_forward(t)\n    return recv_backward()",
        "def send_forward_recv_backward(t):\n    buf = torch.empty(2, 4)\n"
        "    ops = [dist.P2POp(dist.isend, t, 1), dist.P2POp(dist.irecv, buf, 1)]\n"
        "    for req in dist.batch_isend_irecv(ops):\n        req.wait()\n    return buf",
    ).replace(
        "def send_backward_recv_forward(t):\n    send_backward(t)\n    return recv_forward()",
        "def send_backward_recv_forward(t):\n    buf = torch.empty(2, 4)\n"
        "    ops = [dist.P2POp(dist.isend, t, 0), dist.P2POp(dist.irecv, buf, 0)]\n"
        "    for req in dist.batch_isend_irecv(ops):\n        req.wait()\n    return buf",
    )
    assert [f for f in lint_source(batched) if f.kind.startswith("p2p")] == []
    # a loop bound the trace cannot evaluate: it says nothing
    unknown = SEND_FIRST_1F1B.replace("MICRO = 3", "MICRO = int(open('n').read())")
    assert [f for f in lint_source(unknown) if f.kind == "p2p-deadlock"] == []
    # the later stage receives first (the parity order): quiet
    parity = SEND_FIRST_1F1B.replace(
        "def send_backward_recv_forward(t):\n    send_backward(t)\n    return recv_forward()",
        "def send_backward_recv_forward(t):\n    act = recv_forward()\n    send_backward(t)\n    return act",
    )
    assert [f for f in lint_source(parity) if f.kind.startswith("p2p")] == []


CHUNKED_PIPELINE = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 2
N_MICRO = 4
BATCH = 8
SAMPLES = 14


def split_micro(batch):
    return batch.chunk(N_MICRO)


def batches(tensor):
    return [tensor[i:i + BATCH] for i in range(0, len(tensor), BATCH)]


def first_stage_step(x):
    for micro in split_micro(x):
        dist.send(micro.contiguous(), dst=1)


def last_stage_step(y):
    for i in range(N_MICRO):
        buf = torch.empty(2, 4)
        dist.recv(buf, src=0)


def worker():
    rank = dist.get_rank()
    inputs = torch.randn(SAMPLES, 4)
    targets = inputs.sum(dim=1, keepdim=True)
    loss = torch.zeros(1)
    for x, y in zip(batches(inputs), batches(targets)):
        if rank == 0:
            first_stage_step(x)
        else:
            last_stage_step(y)
    dist.broadcast(loss, src=1)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_a_first_stage_whose_chunk_gives_fewer_micro_batches_leaves_the_last_stage_waiting_for_one_more():
    """lintp2p32, modelled on round 12's buggy_pipeline_chunk_fewer_microbatches (fairscale's scatter,
    pytorch/PiPPy PR #192): torch.chunk cuts the short batch of 6 rows into 3 pieces of 2, not 4; the last stage
    runs range(N_MICRO) receives. The trace counts 7 sends against 8 receives on the pair. The twin uses
    torch.tensor_split, which always gives N_MICRO pieces, and is quiet."""
    (found,) = [f for f in lint_source(CHUNKED_PIPELINE) if f.kind.startswith("p2p")]
    assert (found.line, found.kind, found.condition_line) == (26, "p2p-unmatched", 38)
    assert "its 8th such call of 8 in the whole run, but rank 0 sends to rank 1 only 7 times" in found.why
    assert "rank 0 meanwhile waits in `dist.broadcast` at line 39" in found.why
    assert "(here 8 against 7)" in found.fix
    split = CHUNKED_PIPELINE.replace("batch.chunk(N_MICRO)", "torch.tensor_split(batch, N_MICRO)")
    assert [f for f in lint_source(split) if f.kind.startswith("p2p")] == []
    assert [f for f in lint_source(CHUNKED_PIPELINE.replace("SAMPLES = 14", "SAMPLES = 16"))] == []
    # a data set whose length the trace cannot know: quiet
    loaded = CHUNKED_PIPELINE.replace("torch.randn(SAMPLES, 4)", "torch.load('data.pt')")
    assert [f for f in lint_source(loaded) if f.kind.startswith("p2p")] == []


WARMUP_1F1B = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 2
ROWS = 10
GLOBAL = 4
MICRO = 2
WARMUP = 2  # stage 0's warm-up forwards (stage 1: none)


def one_f_one_b(stage, n_stages, num_micro, data):
    num_warmup = WARMUP if stage == 0 else 0
    pending = []
    for _ in range(num_warmup):
        x, y = next(data)
        if stage == 0:
            pending.append(dist.isend(torch.ones(2), dst=1))
    for i in range(num_micro - num_warmup):
        if stage == 0:
            x, y = next(data)
            pending.append(dist.isend(torch.ones(2), dst=1))
            dist.recv(torch.empty(2), src=1)
        else:
            x, y = next(data)
            dist.recv(torch.empty(2), src=0)
            pending.append(dist.isend(torch.ones(2), dst=0))
    for _ in range(num_warmup):
        dist.recv(torch.empty(2), src=1)
    for req in pending:
        req.wait()


def worker():
    stage, n_stages = dist.get_rank(), dist.get_world_size()
    x = torch.randn(ROWS, 3)
    y = x.sum(dim=1, keepdim=True).tanh()
    for start in range(0, ROWS, GLOBAL):
        bx, by = x[start:start + GLOBAL], y[start:start + GLOBAL]
        num_micro = -(-len(bx) // MICRO)
        one_f_one_b(stage, n_stages, num_micro, zip(bx.split(MICRO), by.split(MICRO)))
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_a_warm_up_count_not_clamped_to_a_short_batch_ends_the_first_stage_in_stop_iteration():
    """lintp2p32, modelled on round 23's buggy_pp_1f1b_warmup_unclamped_short_batch (Megatron-LM's schedule
    without min(num_warmup, num_microbatches)): the last batch has one micro-batch, stage 0's warm-up still
    takes two, so its second next() raises StopIteration and its calls end; stage 1 then waits for the gradient
    send stage 0 never receives. The twin clamps the warm-up count and is quiet."""
    found = sorted((f.line, f.kind) for f in lint_source(WARMUP_1F1B) if f.kind.startswith("p2p"))
    assert found == [(30, "p2p-unmatched")], found
    (wait,) = [f for f in lint_source(WARMUP_1F1B) if f.kind.startswith("p2p")]
    assert "rank 1 waits here for its isend at line 26 (to rank 0)" in wait.why
    assert (
        "rank 0 meanwhile raises StopIteration at line 15 (`next(data)` of an iterator with no item left)" in wait.why
    )
    assert "keep rank 0 from raising at line 15" in wait.fix
    clamped = WARMUP_1F1B.replace(
        "num_warmup = WARMUP if stage == 0 else 0", "num_warmup = min(WARMUP, num_micro) if stage == 0 else 0"
    )
    assert [f for f in lint_source(clamped) if f.kind.startswith("p2p")] == []
    # an iterator the trace does not know (its end is unknown): quiet
    opaque = WARMUP_1F1B.replace("zip(bx.split(MICRO), by.split(MICRO))", "iter(loader_of(bx))")
    assert [f for f in lint_source(opaque) if f.kind.startswith("p2p")] == []


VLLM_OMNI_H3 = """
import torch
import torch.distributed as dist

UPLOADS = {"ref.mp4": torch.ones(4, 6)}


def _broadcast_rank0_exception(exc, group=None):
    box = [None if exc is None else repr(exc)]
    dist.broadcast_object_list(box, src=0, group=group)
    if box[0] is not None:
        raise RuntimeError(box[0])


class Pipeline:
    def __init__(self):
        self.rank = dist.get_rank()

    def _prepare(self, req):
        if req not in UPLOADS:
            raise FileNotFoundError(req)
        return UPLOADS[req] * 2 - 1

    def forward(self, req):
        torch.manual_seed(len(req))
        latents = torch.randn(4, 6)
        if req is not None:
            ref, exc = torch.empty(4, 6), None
            if self.rank == 0:
                try:
                    ref = self._prepare(req)
                except Exception as e:
                    exc = e
            _broadcast_rank0_exception(exc)
            dist.broadcast(ref, src=0)
            latents = latents + ref
        dist.all_reduce(latents)
        return latents


class Worker:
    def __init__(self):
        self.pipeline = Pipeline()

    def execute_model(self, reqs):
        outputs = []
        for req in reqs:
            try:
                outputs.append(self.pipeline.forward(req))
            except Exception as exc:
                outputs.append(repr(exc))
        return outputs
"""


def test_a_try_around_a_function_that_hands_on_rank_zeros_failure_before_its_collectives_is_quiet() -> None:
    """Modelled on round 46's vllm-omni H3 pair (``*_vllm_omni_h3_rank0_reference_prep_raises``, vllm-omni PR
    #5810): the worker loop's ``try`` around ``pipeline.forward(req)`` goes on after an error. In the buggy twin
    rank 0's ``ref = self._prepare(req)`` can raise before the broadcast, so rank 0 skips it while rank 1 waits
    there (the ``swallow`` rule's finding at the loop's call, plus the early-exit at the broadcast). In the
    correct twin rank 0's preparation sits in ``try: ... except Exception as e: exc = e`` and
    ``_broadcast_rank0_exception`` shares the error before any other collective, so every rank raises together;
    what forward does before that (``torch.manual_seed``, ``torch.randn(4, 6)``) every rank does alike."""
    assert lint_source(VLLM_OMNI_H3) == []
    buggy = VLLM_OMNI_H3.replace(
        """                try:
                    ref = self._prepare(req)
                except Exception as e:
                    exc = e
            _broadcast_rank0_exception(exc)
""",
        "                ref = self._prepare(req)\n",
    )
    found = lint_source(buggy)
    swallowed = [f for f in found if f.line == 45]
    assert [f.kind for f in swallowed] == ["hidden-collective"]
    assert "sits in the `try` at line 44, whose `except Exception` handler at line 46" in swallowed[0].why
    assert any((f.line, f.kind, f.condition_line) == (31, "early-exit", 29) for f in found)
    # work a rank can fail alone before the first collective (a lookup of its own) still counts
    looked_up = VLLM_OMNI_H3.replace("torch.manual_seed(len(req))", "torch.manual_seed(len(UPLOADS[req]))")
    assert [f.line for f in lint_source(looked_up)] == [49]


GLIMMER = """
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard


class VisionEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(12, 16)

    def forward(self, patches):
        return self.proj(patches)


class Glimmer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_embeddings = nn.Embedding(50, 16)
        self.vision_encoder = VisionEncoder()
        self.decoder = nn.Linear(16, 50)

    def forward(self, tokens, pixel_values=None):
        h = self.tok_embeddings(tokens)
        if pixel_values is not None:
            h = torch.cat([self.vision_encoder(pixel_values), h], dim=0)
        return self.decoder(h)


def worker():
    rank = dist.get_rank()
    model = Glimmer()
    fully_shard(model.vision_encoder)
    fully_shard(model)
    for step in range(2):
        tokens = torch.randint(0, 50, (6,))
        has_image = step == 0 or rank == 0
        pixel_values = torch.randn(4, 12) if has_image else None
        model(tokens, pixel_values).sum().backward()
"""


def test_an_fsdp_sharded_submodule_run_only_when_a_rank_has_an_optional_input_is_reported() -> None:
    """Modelled on round 46's torchtitan pair (``*_torchtitan_vision_encoder_skipped_without_image``, torchtitan
    PR #4777): ``fully_shard(model.vision_encoder)`` shards the encoder that ``Glimmer.forward`` calls as
    ``self.vision_encoder(...)`` only ``if pixel_values is not None``, and the call hands it ``x if has_image
    else None`` with ``has_image`` made from the rank: rank 0 all-gathers the encoder while rank 1 all-gathers
    the decoder. The finding is at the model call, its condition line the forward's test. Quiet: the PR's fix
    (the encoder runs on every rank, on no patches if need be), and every rank given an image."""
    [found] = lint_source(GLIMMER)
    assert (found.line, found.kind, found.condition_line) == (40, "hidden-collective", 26)
    assert found.condition == "pixel_values is not None"
    assert "model() (FSDP forward) -> self.vision_encoder() (FSDP forward)" in found.collective
    assert found.fix.startswith("in the module's forward, call `self.vision_encoder() (FSDP forward)` on every rank")
    fixed = GLIMMER.replace(
        """        if pixel_values is not None:
            h = torch.cat([self.vision_encoder(pixel_values), h], dim=0)
""",
        """        patches = pixel_values if pixel_values is not None else h.new_zeros(0, 12)
        image_tokens = self.vision_encoder(patches)
        if pixel_values is not None:
            h = torch.cat([image_tokens, h], dim=0)
        else:
            h = h + 0.0 * image_tokens.sum()
""",
    )
    assert lint_source(fixed) == []
    assert lint_source(GLIMMER.replace("has_image = step == 0 or rank == 0", "has_image = True")) == []


STARVLA_TRAINER = """
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class CommError(Exception):
    pass


class Wandb:
    def __init__(self, reachable):
        self.reachable, self.run = reachable, None

    def init(self, project):
        time.sleep(0.3)
        if not self.reachable:
            raise CommError("Run initialization has timed out")
        self.run = project


wandb = Wandb(reachable=False)


class Trainer:
    def __init__(self, model):
        self.rank = dist.get_rank()
        self.is_main_process = self.rank == 0
        self.model = DDP(model)
        self._init_wandb()

    def _init_wandb(self):
        if self.is_main_process:
            wandb.init(project="starvla")

    def fit(self, steps):
        for _ in range(steps):
            self.model(torch.randn(4, 10)).sum().backward()


def worker():
    trainer = Trainer(torch.nn.Linear(10, 7))
    trainer.fit(3)
"""


def test_a_constructor_whose_main_process_only_step_can_raise_is_an_early_exit_before_training() -> None:
    """Modelled on round 46's starVLA pair (``*_starvla_wandb_init_fails_on_main``, starVLA PR #369): the
    trainer's constructor runs ``_init_wandb()``, which calls ``wandb.init()`` (a stand-in that raises when the
    server is unreachable, on any rank) only ``if self.is_main_process``; the main process raises out of
    ``Trainer(...)`` while the others wait in training's first collective. The finding is at ``trainer.fit(3)``
    and names the constructor. Quiet: the PR's fix (the init in ``try``/``except Exception``), and a
    ``worker`` that trains inside the constructor's caller only (no finding at ``worker()``'s caller)."""
    [found] = lint_source(STARVLA_TRAINER)
    assert (found.line, found.kind) == (45, "early-exit")
    assert found.condition == "Trainer() raises (line 20) when self.is_main_process (in _init_wandb())"
    fixed = STARVLA_TRAINER.replace(
        """            wandb.init(project="starvla")
""",
        """            try:
                wandb.init(project="starvla")
            except Exception as exc:
                print(f"W&B init failed ({exc}); training with W&B disabled")
""",
    )
    assert lint_source(fixed) == []
    called = STARVLA_TRAINER + '\n\nif __name__ == "__main__":\n    worker()\n'
    assert [f.line for f in lint_source(called)] == [45]


UNITRAJ_LOGGING = """
import torch
import torch.distributed as dist


class WandbError(Exception):
    pass


class Wandb:
    def __init__(self):
        self.run = None

    def init(self, project):
        self.run = project

    def log(self, data):
        if self.run is None:
            raise WandbError("You must call wandb.init() before wandb.log()")


class Model(torch.nn.Module):
    def __init__(self, local_rank, wandb):
        super().__init__()
        self.local_rank, self.wandb = local_rank, wandb
        self.head = torch.nn.Linear(4, 2)

    def validation_step(self, batch, batch_idx):
        prediction = self.head(batch)
        if batch_idx == 0:
            self.wandb.log({"prediction": prediction.tolist()})
        return float(prediction.mean())


def worker():
    rank = dist.get_rank()
    wandb = Wandb()
    if rank == 0:
        wandb.init(project="unitraj")
    model = Model(local_rank=rank, wandb=wandb)
    total = torch.zeros(1)
    for batch_idx in range(3):
        total += model.validation_step(torch.randn(3, 4), batch_idx)
    dist.all_reduce(total)
"""


def test_a_method_logging_on_every_rank_to_a_run_only_rank_zero_made_is_an_early_exit() -> None:
    """Modelled on round 45's UniTraj pair (``*_unitraj_wandb_image_logged_on_every_rank``, vita-epfl/UniTraj PR
    #23): ``Wandb.log`` raises while ``self.run is None``, which only rank 0's ``init`` sets; the validation step
    logs through ``self.wandb`` (handed to the constructor) on every rank, so rank 1 raises out of the loop while
    rank 0 waits in the all_reduce. The finding is at the all_reduce. Quiet: the PR's fix, ``if
    self.local_rank == 0 and batch_idx == 0:`` (a call raising on some ranks under a test on the rank: lint
    cannot tell the test from the ranks that raise, and the test here picks the rank with the run)."""
    [found] = lint_source(UNITRAJ_LOGGING)
    assert (found.line, found.kind) == (44, "early-exit")
    assert found.condition == "model.validation_step() raises (line 19) when self.run is None (in log())"
    fixed = UNITRAJ_LOGGING.replace("        if batch_idx == 0:", "        if self.local_rank == 0 and batch_idx == 0:")
    assert lint_source(fixed) == []
    # a decorator may catch what the function raises (round 14's correct_retry_load_only: `@retry` around the read)
    retried = UNITRAJ_LOGGING.replace(
        "class Model(torch.nn.Module):",
        "def retry(fn):\n    def wrapper(*args):\n        try:\n            return fn(*args)\n"
        "        except Exception:\n            return 0.0\n    return wrapper\n\n\nclass Model(torch.nn.Module):",
    ).replace("    def validation_step(", "    @retry\n    def validation_step(")
    assert lint_source(retried) == []


MOE_ALL_TO_ALL = """
import torch
import torch.distributed as dist

HIDDEN = 4


class AllToAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, in_splits, out_splits):
        ctx.in_splits, ctx.out_splits = in_splits, out_splits
        out = x.new_empty((sum(out_splits), x.shape[1]))
        dist.all_to_all_single(out, x.contiguous(), out_splits, in_splits)
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_in = grad.new_empty((sum(ctx.in_splits), grad.shape[1]))
        dist.all_to_all_single(grad_in, grad.contiguous(), ctx.in_splits, ctx.out_splits)
        return grad_in, None, None


class MoELayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.expert = torch.nn.Linear(HIDDEN, HIDDEN)

    def expert_compute(self, x):
        if x.shape[0] == 0:
            return torch.empty(0, HIDDEN)
        return self.expert(x)

    def forward(self, x, send, recv):
        dispatched = AllToAll.apply(x, send, recv)
        expert_out = self.expert_compute(dispatched)
        return AllToAll.apply(expert_out, recv, send)
"""


def test_an_empty_expert_output_made_from_constants_cuts_an_autograd_all_to_alls_backward() -> None:
    """Modelled on round 45's PaddleFormers pair (``*_paddleformers_moe_expert_empty_breaks_backward``,
    PaddlePaddle/PaddleFormers PR #3010): an expert-parallel rank that receives no tokens returns a fresh
    ``torch.empty(0, HIDDEN)``, handed to ``AllToAll.apply`` whose backward makes the reverse all_to_all; with no
    graph behind it, that rank's backward skips the reverse all-to-alls the others make. The finding is at the
    fresh tensor, its condition the branch on the data. Quiet: the PR's fix (``return x``), and a Function whose
    backward makes no collective."""
    [found] = lint_source(MOE_ALL_TO_ALL)
    assert (found.line, found.kind, found.condition) == (30, "detached-loss", "x.shape[0] == 0")
    assert "which line 36 hands to `AllToAll.apply`, whose backward makes dist.all_to_all_single" in found.why
    assert found.fix.startswith("return a value that keeps the graph: the (empty) input itself")
    assert (
        lint_source(MOE_ALL_TO_ALL.replace("            return torch.empty(0, HIDDEN)", "            return x")) == []
    )
    local = MOE_ALL_TO_ALL.replace(
        "        dist.all_to_all_single(grad_in, grad.contiguous(), ctx.in_splits, ctx.out_splits)\n", ""
    )
    assert lint_source(local) == []


NNUNET_SPLIT = """
import json
import os

import torch.distributed as dist


def save_json(obj, file):
    with open(file, "w") as f:
        json.dump(obj, f, indent=4)


def load_json(file):
    with open(file) as f:
        return json.load(f)


class Trainer:
    def __init__(self, folder):
        self.folder = folder

    def do_split(self, keys):
        splits_file = os.path.join(self.folder, "splits_final.json")
        if not os.path.isfile(splits_file):
            splits = [{"train": keys[1:], "val": keys[:1]}]
            save_json(splits, splits_file)
        else:
            splits = load_json(splits_file)
        return splits[0]

    def run_training(self, keys):
        split = self.do_split(keys)
        dist.barrier()
        return split
"""


def test_every_rank_creating_a_missing_file_in_place_while_others_read_it_is_a_file_race() -> None:
    """Modelled on round 46's nnU-Net pair (``*_nnunet_splits_json_partial_read``, MIC-DKFZ/nnUNet issue #3064, PR
    #3065): every rank runs ``do_split``; a rank that finds ``splits_final.json`` missing writes it in place
    through ``save_json``, and a rank that finds it there reads it through ``load_json``, so a late rank can read
    it half-written. The finding is at the write into the file (``json.dump``), its condition the check. Quiet:
    the PR's fix (a temporary file ``os.replace``d into place), and a check made on rank 0 only."""
    [found] = lint_source(NNUNET_SPLIT)
    assert (found.line, found.kind, found.condition_line) == (10, "file-race", 24)
    assert found.condition == "not os.path.isfile(splits_file)"
    assert "finds `splits_file` missing writes it in place (`save_json(splits, splits_file)` at line 26)" in found.why
    assert "(`load_json(splits_file)` at line 28)" in found.why
    assert found.fix.startswith("write to a temporary file in the same folder and `os.replace` it onto")
    atomic = NNUNET_SPLIT.replace(
        """    with open(file, "w") as f:
        json.dump(obj, f, indent=4)
""",
        """    tmp = file + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=4)
    os.replace(tmp, file)
""",
    )
    assert lint_source(atomic) == []
    ranked = NNUNET_SPLIT.replace(
        "        if not os.path.isfile(splits_file):",
        "        if dist.get_rank() == 0 and not os.path.isfile(splits_file):",
    )
    assert [f.kind for f in lint_source(ranked) if f.kind == "file-race" and f.line == 10] == []
    # the first process builds the cache while the others wait (transformers' examples, round 31's run_glue;
    # the same in a `with ...main_process_first():` block, round 4)
    first = NNUNET_SPLIT.replace(
        '        splits_file = os.path.join(self.folder, "splits_final.json")\n',
        "        if dist.get_rank() != 0:\n            dist.barrier()\n"
        '        splits_file = os.path.join(self.folder, "splits_final.json")\n',
    )
    assert [f for f in lint_source(first) if f.kind == "file-race"] == []
    # round 44's minerva cache opened with mode "xb": the second rank to find it missing fails at the open
    exclusive = NNUNET_SPLIT.replace('    with open(file, "w") as f:', '    with open(file, "x") as f:')
    [found] = lint_source(exclusive)
    assert (found.line, found.collective) == (9, "open")
    assert "with mode 'x' a second rank that also found it missing raises FileExistsError at this open" in found.why


NVRX_SAVE = """import torch.distributed as dist


class CheckpointException(RuntimeError):
    pass


def opener_for(rank):
    if rank == 1:
        def failing_open(path, mode="r"):
            raise OSError(28, "No space left on device", path)
        return failing_open
    return open


def write_shard(rank, path, data):
    with opener_for(rank)(path, "wb") as f:
        f.write(data)
    return [rank]


def save_checkpoint(rank, path, data):
    results = write_shard(rank, path, data)
    gathered = [None] * dist.get_world_size() if rank == 0 else None
    dist.gather_object(results, gathered, dst=0)
    dist.barrier()


def worker():
    rank = dist.get_rank()
    try:
        save_checkpoint(rank, "ckpt", b"x")
    except CheckpointException as exc:
        print(exc)
    dist.barrier()
"""


def test_a_fault_handed_to_one_rank_by_a_factory_is_an_early_exit_and_a_broadcast_verdict_is_not() -> None:
    """Modelled on round 47's NVRx pair (``*_nvrx_async_ckpt_write_error_not_propagated``, NVIDIA/nvidia-
    resiliency-ext PR #170). Buggy: ``opener_for(rank)`` hands rank 1 an ``open`` that always raises, so rank 1's
    shard write raises ``OSError`` and it leaves before the ``gather_object`` of write results (the ``except
    CheckpointException`` around the save does not catch an ``OSError``): an early exit at the gather. Correct
    (the PR): the write's error is caught and gathered, rank 0 broadcasts a verdict, and every rank raises
    ``CheckpointException`` on it together, so neither the test on the broadcast ``verdict[0]`` nor the handler
    of a class only that agreed raise makes is a rank's own path."""
    found = lint_source(NVRX_SAVE)
    gather = [f for f in found if f.line == 25]
    assert [(f.kind, f.collective) for f in gather] == [("early-exit", "dist.gather_object")]
    assert gather[0].condition.startswith(
        "write_shard() raises (line 11) when opener_for() returns failing_open(), which raises, when rank == 1"
    )
    assert not [f for f in found if f.kind == "except-path"]  # no raise of CheckpointException: nothing jumps there
    fixed = NVRX_SAVE.replace(
        "    results = write_shard(rank, path, data)\n",
        "    try:\n        results = write_shard(rank, path, data)\n    except Exception as exc:\n        results = exc\n",
    ).replace(
        "    dist.gather_object(results, gathered, dst=0)\n    dist.barrier()\n",
        "    dist.gather_object(results, gathered, dst=0)\n    verdict = [None]\n    if rank == 0:\n"
        "        verdict[0] = [r for r in gathered if isinstance(r, BaseException)] or None\n"
        "    dist.broadcast_object_list(verdict, src=0)\n    if verdict[0] is not None:\n"
        "        raise CheckpointException(verdict[0])\n    dist.barrier()\n",
    )
    assert lint_source(fixed) == []
    # the verdict raised without its broadcast is rank 0's alone: the ranks leave apart
    unshared = fixed.replace("    dist.broadcast_object_list(verdict, src=0)\n", "")
    assert [f for f in lint_source(unshared) if f.kind in ("early-exit", "except-path")]


CAUGHT_LOAD = """
import torch
import torch.distributed as dist


def load(rank):
    if rank == 1:
        raise OSError("disk")
    return torch.ones(1)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    try:
        t = load(rank)
    except OSError:
        t = torch.zeros(1)
    dist.all_reduce(t)


if __name__ == "__main__":
    main()
"""


def test_a_raise_of_a_function_that_its_callers_handler_catches_by_name_is_no_early_exit() -> None:
    """review90l C2: ``load()`` raises ``OSError`` on rank 1 only, and ``except OSError:`` around its call goes
    on to the all_reduce: every rank reaches it. A handler of another type does not catch it: an early exit."""
    assert lint_source(CAUGHT_LOAD) == []
    other = lint_source(CAUGHT_LOAD.replace("except OSError:", "except KeyError:"))
    assert [(f.line, f.kind) for f in other] == [(19, "early-exit")]


FLOAT_METER = """
import torch
import torch.distributed as dist


class Meter:
    def __init__(self):
        self.total = 0.0

    def add(self, value):
        self.total += value

    def sync(self):
        t = torch.tensor(self.total)
        dist.all_reduce(t)
        return t.item()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    m = Meter()
    for i in range(3):
        m.add(float(i * (rank + 1)))
    print(rank, m.sync())


if __name__ == "__main__":
    main()
"""


def test_an_attribute_accumulator_that_is_only_handed_floats_has_one_dtype() -> None:
    """review90l C3: ``self.total = 0.0`` in ``__init__`` and ``self.total += value`` in ``add``, whose every call
    hands it ``float(...)``: a Python float on every rank. Handed a numpy float64 on rank 1 only, the total becomes
    one there, and ``torch.tensor`` makes float64 against the others' float32: a dtype-mismatch."""
    assert lint_source(FLOAT_METER) == []
    numpy_on_one = FLOAT_METER.replace("import torch\n", "import numpy as np\nimport torch\n", 1).replace(
        "m.add(float(i * (rank + 1)))", "m.add(np.float64(i) if rank else float(i))"
    )
    assert [(f.line, f.kind) for f in lint_source(numpy_on_one)] == [(16, "dtype-mismatch")]


FIXED_GROUPS_IF_ELSE = """
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    g01 = dist.new_group([0, 1])
    g23 = dist.new_group([2, 3])
    t = torch.ones(1) * rank
    if rank < 2:
        dist.all_reduce(t, group=g01)
    else:
        dist.all_reduce(t, group=g23)
    dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_an_if_else_over_groups_of_fixed_ranks_is_not_tried_beyond_the_world_they_fill() -> None:
    """review90l C1: in a world of 4, ranks 2 and 3 reach the ``else`` and belong to ``g23``: the 8-rank world,
    where rank 4 would reach it too, is beyond what lint tries for groups of fixed ranks (as for the help's
    ``group=g01 if r < 2 else g23``). The ``else`` on ``g01`` is a non-member call in a world of 4 already."""
    assert lint_source(FIXED_GROUPS_IF_ELSE) == []
    wrong = lint_source(FIXED_GROUPS_IF_ELSE.replace("t, group=g23", "t, group=g01"))
    assert [(f.line, f.kind) for f in wrong] == [(15, "non-member")]
    assert "run with 4 ranks" in wrong[0].why or "4 ranks" in wrong[0].condition


FOLDER_THEN_SAVE = """
import os
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    folder = "/tmp/out106"
    if rank == 0:
        os.makedirs(folder)
    torch.save(torch.ones(1), os.path.join(folder, f"r{rank}.pt"))
    dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_a_folder_race_quotes_the_error_of_the_call_that_uses_the_folder() -> None:
    """review90l C7: torch.save into a missing folder raises "RuntimeError: Parent directory ... does not exist."
    (torch 2.13), not open()'s 'No such file or directory'; an open() keeps the latter."""
    saved = [f for f in lint_source(FOLDER_THEN_SAVE) if f.kind == "file-race"]
    assert len(saved) == 1 and "RuntimeError 'Parent directory ... does not exist.'" in saved[0].why
    assert "No such file" not in saved[0].why
    opened = FOLDER_THEN_SAVE.replace(
        'torch.save(torch.ones(1), os.path.join(folder, f"r{rank}.pt"))',
        'open(os.path.join(folder, f"r{rank}.txt"), "w").write("x")',
    )
    found = [f for f in lint_source(opened) if f.kind == "file-race"]
    assert len(found) == 1 and "'No such file or directory'" in found[0].why


RANK_P2P = """
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    t = torch.ones(1)
    if rank == 0:
        dist.send(t, 1)
        dist.recv(t, 1)
    else:
        dist.recv(t, 0)
        dist.send(t, 0)


if __name__ == "__main__":
    main()
"""


def test_the_help_says_p2p_calls_are_reported_only_when_they_hang_on_each_world_tried() -> None:
    """review90l C6: with no world size stated, lint reports p2p calls only when they hang on each of 2, 3 and 4
    ranks (this exchange pairs on 2 ranks: quiet); the help says so, and how to have 3 ranks checked."""
    assert lint_source(RANK_P2P) == []
    stated = lint_source(RANK_P2P.replace("import torch\n", "import torch\n\nWORLD_SIZE = 3\n", 1))
    assert {f.kind for f in stated} == {"p2p-unmatched"}
    help_text = " ".join(barrierlab.lint.HELP.split())
    assert "reported only when the calls hang on each of 2, 3 and 4 ranks" in help_text
    assert "state WORLD_SIZE = 3 in the file to have it checked on 3" in help_text


LEADER_BY_NAME = """
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    g = dist.new_group([2, 3])
    t = torch.ones(1) * rank
    if rank in (2, 3):
        leader = dist.get_rank(g)
        if leader == 0:
            t = t * 10
        dist.broadcast(t, src=0, group=g)
    dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_a_literal_tested_as_the_groups_leader_through_a_name_is_a_group_rank() -> None:
    """review90l C5: ``leader = dist.get_rank(g)``, ``if leader == 0:``, then ``broadcast(src=0, group=g)``: 0 is
    the rank within ``g`` = [2, 3], which holds no global rank 0 (torch: "Global rank 0 is not part of group").
    The correct twin passes the global rank."""
    found = lint_source(LEADER_BY_NAME)
    assert [(f.line, f.kind) for f in found] == [(15, "group-rank")]
    assert "`leader == 0`" in found[0].why
    fixed = LEADER_BY_NAME.replace("src=0, group=g", "src=dist.get_global_rank(g, 0), group=g")
    assert lint_source(fixed) == []


RAISE_IN_MAIN = """
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 1:
        raise ValueError("bad shard")
    dist.barrier()


if __name__ == "__main__":
    main()
"""


def test_a_raise_before_a_functions_own_barrier_is_reported_once_not_again_at_its_call() -> None:
    """review90l M1: rank 1 raises inside ``main()`` before its barrier: one early exit at the barrier. The
    call ``main()``, which every rank makes, is not reported again as a hidden early exit. With the barrier made
    after ``main()`` returns, at the call's side, the finding is there."""
    found = lint_source(RAISE_IN_MAIN)
    assert [(f.line, f.kind) for f in found] == [(10, "early-exit")]
    outside = RAISE_IN_MAIN.replace("    dist.barrier()\n\n\nif", "\n\nif").replace(
        "    main()\n", "    main()\n    dist.barrier()\n"
    )
    assert [f.kind for f in lint_source(outside)] == ["early-exit"]


JOINED_LOOP = """
import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(2, 2))
    stat = torch.zeros(1)
    with Join([model]):
        for i in range(3 + rank):
            model(torch.ones(1, 2)).sum().backward()
            dist.all_reduce(stat)


if __name__ == "__main__":
    main()
"""


def test_a_rank_dependent_loop_already_under_join_is_not_told_to_use_join() -> None:
    """review90l M2: the loop runs under ``with Join([model]):`` already; Join shadows only its Joinables'
    collectives, not the plain all_reduce. The finding says so, and its fix moves the all_reduce out of the block
    instead of recommending Join. Without Join, the fix still names it."""
    found = [f for f in lint_source(JOINED_LOOP) if f.kind == "rank-dependent-loop"]
    assert [f.line for f in found] == [16]
    assert "Join shadows only the collectives of the Joinables" in found[0].why
    assert "torch.distributed.algorithms.Join" not in found[0].fix
    assert found[0].fix.startswith("move `dist.all_reduce` out of the `with Join([model]):` block")
    plain = JOINED_LOOP.replace("    with Join([model]):\n", "    if True:\n")
    loop = [f for f in lint_source(plain) if f.kind == "rank-dependent-loop"]
    assert loop and "torch.distributed.algorithms.Join" in loop[0].fix


DDP_NO_BACKWARD = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 1))
    x = torch.full((8, 4), 10.0 * rank)
    stat = torch.zeros(1)
    for step in range(10):
        loss = model(x).pow(2).mean()
        if loss.item() < 1.0:
            break
        dist.all_reduce(stat)


if __name__ == "__main__":
    main()
"""


def test_a_ddp_forward_of_a_buffer_less_model_in_a_file_with_no_backward_is_no_collective() -> None:
    """review90l M3: a Linear has no buffers and the file runs no backward, so DDP's forward issues nothing: the
    early exit is reported at the all_reduce only. With a backward in the loop, the forward after it rebuilds the
    gradient buckets, and it is reported too."""
    found = lint_source(DDP_NO_BACKWARD)
    assert [(f.line, f.kind) for f in found] == [(17, "early-exit")]
    trained = DDP_NO_BACKWARD.replace(
        "        dist.all_reduce(stat)\n", "        loss.backward()\n        dist.all_reduce(stat)\n"
    )
    assert any("(DDP forward)" in f.collective for f in lint_source(trained))


# lintrecall33b: removed-before-read -----------------------------------------------------------------------------

TEMPDIR_REMOVED_BEFORE_BARRIER = """
import os
import tempfile

import torch
import torch.distributed as dist


def prepare_shards(rank, world_size):
    if rank == 0:
        with tempfile.TemporaryDirectory(prefix="shards_") as scratch:
            for r in range(1, world_size):
                torch.save(torch.full((4,), float(r)), os.path.join(scratch, f"shard_{r}.pt"))
            dist.broadcast_object_list([scratch], src=0)
        mine = torch.zeros(4)
    else:
        holder = [None]
        dist.broadcast_object_list(holder, src=0)
        scratch = holder[0]
    dist.barrier()
    if rank != 0:
        mine = torch.load(os.path.join(scratch, f"shard_{rank}.pt"))
    return mine
"""


def test_removed_before_read_at_the_end_of_a_temporary_directory_round16() -> None:
    """Modelled on tests/realworld/round16/buggy_tempdir_deleted_before_barrier.py: rank 0's ``with
    TemporaryDirectory()`` block ends, deleting the shards, before the barrier after which the other ranks load
    them (under torchrun, ranks 1 and 2 raised FileNotFoundError in torch.load). The twin of
    correct_tempdir_barrier_inside_with.py, with the barrier inside the block, is quiet."""
    [found] = [f for f in lint_source(TEMPDIR_REMOVED_BEFORE_BARRIER) if f.kind == "removed-before-read"]
    assert (found.line, found.condition_line, found.condition, found.collective) == (
        20,
        11,
        "rank == 0",
        "dist.barrier",
    )
    assert "FileNotFoundError" in found.why and "not a race" in found.why
    assert "`os.path.join(scratch, f'shard_{rank}.pt')`, a path inside it," in found.why
    correct = TEMPDIR_REMOVED_BEFORE_BARRIER.replace(
        "            dist.broadcast_object_list([scratch], src=0)\n",
        "            dist.broadcast_object_list([scratch], src=0)\n            dist.barrier()\n",
    ).replace(
        '    dist.barrier()\n    if rank != 0:\n        mine = torch.load(os.path.join(scratch, f"shard_{rank}.pt"))\n',
        '    if rank != 0:\n        mine = torch.load(os.path.join(scratch, f"shard_{rank}.pt"))\n        dist.barrier()\n',
    )
    assert correct != TEMPDIR_REMOVED_BEFORE_BARRIER
    assert [f for f in lint_source(correct) if f.kind == "removed-before-read"] == []
    # a read that may fail on purpose, or a path bound again after the barrier, proves nothing
    guarded = TEMPDIR_REMOVED_BEFORE_BARRIER.replace(
        '        mine = torch.load(os.path.join(scratch, f"shard_{rank}.pt"))\n',
        '        try:\n            mine = torch.load(os.path.join(scratch, f"shard_{rank}.pt"))\n'
        "        except FileNotFoundError:\n            mine = torch.zeros(4)\n",
    )
    rebound = TEMPDIR_REMOVED_BEFORE_BARRIER.replace(
        "    if rank != 0:\n        mine", '    scratch = os.environ["SHARDS"]\n    if rank != 0:\n        mine'
    )
    for quiet in (guarded, rebound):
        assert quiet != TEMPDIR_REMOVED_BEFORE_BARRIER
        assert [f for f in lint_source(quiet) if f.kind == "removed-before-read"] == []


MEMMAP_REMOVED_BEFORE_DDP = """
import os
import shutil
import tempfile

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def get_batch(data_dir):
    data = np.memmap(os.path.join(data_dir, "train.bin"), dtype=np.uint16, mode="r")
    return torch.from_numpy(data[:8].astype(np.int64)).float()


def worker():
    rank = dist.get_rank()
    holder = [tempfile.mkdtemp() if rank == 0 else None]
    dist.broadcast_object_list(holder, src=0)
    data_dir = holder[0]
    if rank == 0:
        np.arange(64, dtype=np.uint16).tofile(os.path.join(data_dir, "train.bin"))
    dist.barrier()
    if rank == 0:
        shutil.rmtree(data_dir, ignore_errors=True)
    model = DDP(nn.Linear(8, 1))
    for step in range(3):
        x = get_batch(data_dir)
        model(x).sum().backward()
    dist.barrier()
"""


def test_removed_before_read_through_a_helper_after_the_ddp_constructor_round17() -> None:
    """Modelled on tests/realworld/round17/buggy_memmap_tokens_removed_while_training.py: rank 0 removes the data
    folder, DDP's constructor (its parameter-shape all_gather) holds rank 1 until rank 0 is past the removal, and
    rank 1's get_batch then memory-maps a file that is gone. Removing the folder after the final barrier, as
    correct_memmap_tokens_removed_after_training.py does, is quiet."""
    [found] = [f for f in lint_source(MEMMAP_REMOVED_BEFORE_DDP) if f.kind == "removed-before-read"]
    assert (found.line, found.condition_line, found.condition) == (28, 27, "rank == 0")
    assert "get_batch(), which reads it with np.memmap" in found.why
    correct = (
        MEMMAP_REMOVED_BEFORE_DDP.replace(
            "    if rank == 0:\n        shutil.rmtree(data_dir, ignore_errors=True)\n", ""
        )
        + "    if rank == 0:\n        shutil.rmtree(data_dir)\n"
    )
    assert [f for f in lint_source(correct) if f.kind == "removed-before-read"] == []
    # a folder of each rank's own is removed by its own rank only
    own = MEMMAP_REMOVED_BEFORE_DDP.replace(
        "        shutil.rmtree(data_dir, ignore_errors=True)\n", '        shutil.rmtree(f"{data_dir}{rank}")\n'
    )
    assert [f for f in lint_source(own) if f.kind == "removed-before-read"] == []


RANK_VALUED_DICT = """\
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    metrics = {"loss": torch.tensor([1.0 + rank]), "acc": torch.tensor([10.0 + rank]), "f1": torch.tensor([100.0])}
    for name in LOOP:
        dist.all_reduce(metrics[name])
"""


@pytest.mark.parametrize(
    ("loop", "kind"),
    [
        ("set(metrics)", "set-order"),
        ("set(metrics.keys())", "set-order"),
        ("metrics", None),
        ("sorted(metrics)", None),
        ("metrics.keys()", None),
        ("list(metrics.items())", None),
    ],
)
def test_a_loop_over_the_keys_of_a_dict_whose_values_hold_the_rank_runs_as_often_on_every_rank(
    loop: str, kind: str | None
) -> None:
    """review91l C1: a dict literal's keys are the same on every rank even when its values hold the rank, so a
    loop over them (or over set(d)) runs as often on every rank: set(d) is a set-order finding (the order of a
    set of strings differs between processes), not rank-dependent-loop; sorted(d) or d itself is quiet."""
    source = RANK_VALUED_DICT.replace("LOOP", loop)
    assert [(f.line, f.kind) for f in lint_source(source)] == ([(10, kind)] if kind else []), loop


def test_a_loop_over_a_dict_given_a_rank_key_stays_rank_dependent() -> None:
    """review91l C1's twin: a key made from the rank (in the literal, or stored after it) makes the ranks'
    dicts differ in size, and a loop over them still calls its collective a different number of times."""
    keyed = RANK_VALUED_DICT.replace('"f1": ', '"f1": torch.ones(1)} if rank else {"x": ').replace("LOOP", "metrics")
    stored = RANK_VALUED_DICT.replace("LOOP", "metrics").replace(
        "    for name", "    if rank == 0:\n        metrics['extra'] = torch.ones(1)\n    for name"
    )
    rank_key = RANK_VALUED_DICT.replace('"f1"', 'f"f1_{rank % 2}"').replace("LOOP", "set(metrics)")
    for source in (keyed, stored):
        assert "rank-dependent-loop" in {f.kind for f in lint_source(source)}, source
    assert [f.kind for f in lint_source(rank_key)] == ["rank-dependent-loop"]


def test_the_help_says_an_unmatched_recv_ends_at_the_timeout_or_when_its_peer_exits() -> None:
    """review91l M1: rank 2 of 3 in `if rank == 0: send(t, 1) else: recv(t, 0)` does not wait forever: run on 3
    ranks it raised "Connection closed by peer" when rank 0 ended, and "Timed out waiting 5000ms for recv" with
    rank 0 kept alive. The help says so, as every finding's "waits until the timeout" does."""
    text = " ".join(barrierlab.lint.HELP.split())
    assert "forever" not in text
    assert "rank 2's recv has no sender: it fails when rank 0 exits, or at the timeout if rank 0 stays" in text


# --- lintrecall33 ------------------------------------------------------------------------------------------------

STALE_BATON = """
import os

import torch
import torch.distributed as dist
from torch.utils.file_baton import FileBaton


def load_extension(build_dir):
    baton = FileBaton(os.path.join(build_dir, "lock"))
    if baton.try_acquire():
        try:
            build(build_dir)
        finally:
            baton.release()
    else:
        baton.wait()
    return read(build_dir)


def worker(build_dir):
    ext = load_extension(build_dir)
    t = torch.ones(1)
    dist.all_reduce(t)
"""

FLOCK_BUILD = """
import fcntl
import os
import time

import torch
import torch.distributed as dist


def load_extension(build_dir, timeout_s=10.0):
    with open(os.path.join(build_dir, ".flock"), "a") as lock_file:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.05)
        try:
            build(build_dir)
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
    return read(build_dir)


def worker(build_dir):
    ext = load_extension(build_dir)
    t = torch.ones(1)
    dist.all_reduce(t)
"""


def test_a_file_baton_wait_with_no_bound_in_a_program_with_collectives_is_a_stale_lock() -> None:
    """Round 47's buggy_gptqmodel_jit_build_stale_lock (and OpenEquivariance): torch's FileBaton.wait() polls while
    the lock file exists, with no timeout and no owner check, so a build killed before release() leaves every rank
    spinning outside any collective. The PR's fcntl.flock with a deadline is quiet; so is a baton in a program
    without collectives, and a function that removes a (stale) lock file itself."""
    found = [f for f in lint_source(STALE_BATON) if f.kind == "stale-lock"]
    assert [(f.line, f.collective) for f in found] == [(17, "baton.wait()")]
    assert "no timeout" in found[0].why and "fcntl.flock" in found[0].fix
    assert not lint_source(FLOCK_BUILD)
    assert not [f for f in lint_source(STALE_BATON.replace("    dist.all_reduce(t)\n", "")) if f.kind == "stale-lock"]
    removes = STALE_BATON.replace(
        "        baton.wait()\n", "        os.remove(baton.lock_file_path)\n        baton.wait()\n"
    )
    assert not [f for f in lint_source(removes) if f.kind == "stale-lock"]


UNEVEN_CHUNKS = """
import torch
import torch.distributed as dist

WORLD_SIZE = 4
LATENT_HEIGHT = 30


def transformer_step(patch, t):
    return patch - 0.1 * torch.tanh(patch) * (1 - t)


def denoise(rank, sp_degree, latents, group=None):
    patches = latents.chunk(sp_degree, dim=1)
    local = patches[dist.get_rank(group)]
    for t in (0.9, 0.5, 0.1):
        local = transformer_step(local, t)
    gathered = [torch.empty_like(local) for _ in range(sp_degree)]
    dist.all_gather(gathered, local.contiguous(), group=group)
    return torch.cat(gathered, dim=1)


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    latents = torch.randn(4, LATENT_HEIGHT, 45)
    return denoise(rank, world_size, latents)
"""


def test_a_chunk_by_the_world_size_of_a_length_it_does_not_divide_then_all_gather_is_a_size_mismatch() -> None:
    """Round 47's buggy_xdit_cogvideox_sp4_latent_height: 30 latent rows chunked over 4 ranks are 8, 8, 8 and 6, and
    each rank all_gathers its own piece (through an element-wise step) into empty_like buffers. A length the world
    size divides is quiet; so is a step that may reshape the piece, and a call on a subgroup."""
    found = [f for f in lint_source(UNEVEN_CHUNKS) if f.kind == "size-mismatch"]
    assert [(f.line, f.condition) for f in found] == [(14, "30 is not a multiple of the world size")]
    assert "8, 8, 8, 6" in found[0].why and "all_gather (line 19)" in found[0].why
    assert not lint_source(UNEVEN_CHUNKS.replace("LATENT_HEIGHT = 30", "LATENT_HEIGHT = 32"))
    reshaped = UNEVEN_CHUNKS.replace("return patch - 0.1", "return torch.cat([patch, patch]) - 0.1")
    assert not lint_source(reshaped)
    subgroup = UNEVEN_CHUNKS.replace(
        "return denoise(rank, world_size, latents)", "return denoise(rank, world_size, latents, sp)"
    )
    assert not lint_source(subgroup)
    unstated = UNEVEN_CHUNKS.replace("WORLD_SIZE = 4\n", "")  # 30 rows: uneven on 4 and 8 ranks
    assert [f.line for f in lint_source(unstated)] == [13]  # one line up


RANK_ORDERED_MODULES = """
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

SPECS = {"policy_a": 8, "policy_b": 6}


def build_modules():
    modules = {}
    for module_id, dim in SPECS.items():
        modules[module_id] = DDP(nn.Linear(dim, 2))
    return modules


def sample_batches(rank):
    order = ["policy_b", "policy_a"] if rank == 3 else ["policy_a", "policy_b"]
    batches = {}
    for module_id in order:
        batches[module_id] = torch.randn(16, SPECS[module_id])
    return batches


def update(modules, optimizer, policy_batches):
    losses = []
    for module_id, batch in policy_batches.items():
        losses.append(modules[module_id](batch).sum())
    optimizer.zero_grad()
    sum(losses).backward()
    optimizer.step()


def worker():
    rank = dist.get_rank()
    modules = build_modules()
    optimizer = torch.optim.SGD([p for m in modules.values() for p in m.parameters()], lr=0.01)
    for step in range(3):
        update(modules, optimizer, sample_batches(rank))
"""


def test_a_loop_of_ddp_forwards_over_a_dict_whose_order_a_rank_test_picks_is_a_collective_order() -> None:
    """Round 47's buggy_rllib_multiagent_module_order: learner 3 fills its batch dict in another order, and the
    update runs each key's DDP module in the dict's order, so the backward all-reduces the modules' buckets in
    different orders. The fix, `for module_id in sorted(policy_batches)`, is quiet; so is one order on every rank,
    and a loop that makes no collective."""
    found = [f for f in lint_source(RANK_ORDERED_MODULES) if f.kind == "collective-order"]
    assert [(f.line, f.condition_line) for f in found] == [(27, None)]
    assert "rank == 3" in found[0].condition and "modules[module_id]" in found[0].why
    assert "sorted" in found[0].fix
    fixed = RANK_ORDERED_MODULES.replace(
        "    for module_id, batch in policy_batches.items():\n",
        "    for module_id in sorted(policy_batches):\n        batch = policy_batches[module_id]\n",
    )
    assert not lint_source(fixed)
    same = RANK_ORDERED_MODULES.replace(
        '["policy_b", "policy_a"] if rank == 3', '["policy_a", "policy_b"] if rank == 3'
    )
    assert not lint_source(same)
    plain = RANK_ORDERED_MODULES.replace("DDP(nn.Linear(dim, 2))", "nn.Linear(dim, 2)")
    assert not lint_source(plain)


SET_SEEDED_OUTPUTS = """
import torch
import torch.distributed as dist

SPEC = {"energy": "graph", "stress": "graph", "forces": "node"}


class Model:
    supported = frozenset(SPEC)

    def __init__(self, active):
        self.active = set(active)

    def output_names(self):
        return self.active & self.supported

    def __call__(self, x):
        outputs = dict.fromkeys(self.output_names())
        for key in outputs:
            outputs[key] = x * len(key)
        return outputs


def consolidate(outputs):
    for key, value in list(outputs.items()):
        if SPEC[key] == "graph":
            dist.all_reduce(value)
    return outputs


def step(model, x):
    outputs = model(x)
    outputs = consolidate(outputs)
    return outputs


def worker():
    model = Model(["energy", "forces", "stress"])
    for _ in range(2):
        step(model, torch.ones(3))
"""


def test_a_collective_per_key_of_a_dict_seeded_from_a_set_of_strings_in_another_function_is_a_set_order() -> None:
    """Round 43's buggy_nvalchemi_output_set_order_collectives: the model's outputs are `dict.fromkeys` of a set of
    names (each torchrun worker has its own string hash seed), returned through `__call__` and all-reduced key by
    key in another function. `sorted(outputs)` is quiet, and so is a set of ints."""
    found = [f for f in lint_source(SET_SEEDED_OUTPUTS) if f.kind == "set-order"]
    assert [f.line for f in found] == [25]
    assert "set(active)" in found[0].condition and "PYTHONHASHSEED" in found[0].why
    fixed = SET_SEEDED_OUTPUTS.replace(
        "    for key, value in list(outputs.items()):\n",
        "    for key in sorted(outputs):\n        value = outputs[key]\n",
    )
    assert not lint_source(fixed)
    ints = SET_SEEDED_OUTPUTS.replace("self.active = set(active)", "self.active = set(range(3))")
    assert not [f for f in lint_source(ints) if f.kind == "set-order"]


MESH_PEERS = """
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

WORLD_SIZE = 4
PP, DP = 2, 2


def pipeline_peers(mesh):
    rank = dist.get_rank()
    stage = mesh.get_local_rank("pp")
    prev_rank, next_rank = rank - 1, rank + 1
    if stage == 0:
        prev_rank = None
    if stage == PP - 1:
        next_rank = None
    return stage, prev_rank, next_rank


def allreduce_grads(params, dp_group):
    for p in params.parameters():
        dist.all_reduce(p.grad, group=dp_group)
        p.grad /= DP


def worker():
    mesh = init_device_mesh("cpu", (PP, DP), mesh_dim_names=("pp", "dp"))
    stage, prev_rank, next_rank = pipeline_peers(mesh)
    dp_group = mesh.get_group("dp")
    model = torch.nn.Linear(4, 4)
    for step in range(2):
        if stage == 0:
            dist.send(torch.ones(4), dst=next_rank)
        else:
            h = torch.empty(4)
            dist.recv(h, src=prev_rank)
        allreduce_grads(model, dp_group)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_p2p_peers_rank_plus_one_under_a_pp_dp_device_mesh_are_traced_through_the_mesh_layout() -> None:
    """Round 22's buggy_pp_peers_rank_plus_one_under_dp: with init_device_mesh (pp, dp) = (2, 2) the ranks of a stage
    are 0, 1 and 2, 3, so rank + 1 is a rank of the same stage: rank 0 sends to rank 1, which only sends, and rank
    3 waits for rank 2, which only receives. The p2p trace now lays the mesh out (get_local_rank, get_group) and
    passes over a loop over a module's parameters that stores into them. Peers taken from the pp group
    (dist.get_global_rank(pp_group, stage + 1), the fix) are quiet."""
    found = lint_source(MESH_PEERS)
    assert [(f.kind, f.line) for f in found] == [("p2p-unmatched", 34), ("p2p-unmatched", 37)]
    assert "rank 0 sends to rank 1" in found[0].why
    fixed = MESH_PEERS.replace("    rank = dist.get_rank()\n", '    pp_group = mesh.get_group("pp")\n').replace(
        "    prev_rank, next_rank = rank - 1, rank + 1\n",
        "    prev_rank = dist.get_global_rank(pp_group, stage - 1) if stage > 0 else None\n"
        "    next_rank = dist.get_global_rank(pp_group, stage + 1) if stage < PP - 1 else None\n",
    )
    assert not lint_source(fixed)
    # a shape that does not fill the stated world stops the trace (torch raises there): quiet
    assert not lint_source(MESH_PEERS.replace("WORLD_SIZE = 4", "WORLD_SIZE = 6"))


SPAWNED_P2P = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD_SIZE = 2


def main(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    t = torch.zeros(4)
    if rank == 0:
        dist.send(t, dst=1)
        dist.recv(t, src=1)
    else:
        dist.send(t, dst=0)
        dist.recv(t, src=0)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(WORLD_SIZE,), nprocs=WORLD_SIZE, join=True)
"""


def test_the_p2p_trace_follows_an_mp_spawn_entry_into_the_spawned_function() -> None:
    """The p2p trace used to start only from a __main__ block it could run through and stopped at `mp.spawn(main,
    ...)` (the DDP tutorial's entry, round 17's SELF_INIT items). It now runs `main(rank, *args)` for each rank: both
    ranks send first (run with mp.spawn on gloo: still waiting when killed at 30 s), a p2p-deadlock; rank 1
    receiving first is quiet, and so is a spawned function whose init_process_group names another world size (the
    group it makes is not the trace's)."""
    found = lint_source(SPAWNED_P2P)
    assert [(f.kind, f.line) for f in found] == [("p2p-deadlock", 13), ("p2p-deadlock", 16)]
    fixed = SPAWNED_P2P.replace(
        "        dist.send(t, dst=0)\n        dist.recv(t, src=0)\n",
        "        dist.recv(t, src=0)\n        dist.send(t, dst=0)\n",
    )
    assert not lint_source(fixed)
    other_world = SPAWNED_P2P.replace("world_size=world_size)", "world_size=2 * world_size)")
    assert not lint_source(other_world)


# --- lint92: review92l's findings

HF_CACHE = """\
import os
import torch
import torch.distributed as dist


def load_and_cache_examples(rank, path):
    if rank not in [-1, 0]:
        dist.barrier()
    if not os.path.exists(path):
        feats = torch.arange(10)
        if rank in [-1, 0]:
            torch.save(feats, path)
    else:
        feats = torch.load(path)
    if rank == 0:
        dist.barrier()
    return feats
"""


def test_review92l_c2_others_barrier_before_the_read_pairs_with_the_writers_barrier_after_the_write() -> None:
    """review92l C2: transformers' load_and_cache_examples. The other ranks' barrier before their read pairs with
    rank 0's barrier after its write (the writer writes after 0 collectives, the readers read after 1), so the write
    is ordered before the read: no file-race. Without the readers' barrier it is one."""
    assert lint_source(HF_CACHE) == []
    swapped = HF_CACHE.replace("    if not os.path.exists(path):", "    if not os.path.exists(path) and True:")
    assert lint_source(swapped) == []
    found = lint_source(HF_CACHE.replace("    if rank not in [-1, 0]:\n        dist.barrier()\n", ""))
    assert [f.line for f in found if f.kind == "file-race"] == [12]
    # the readers' barrier before the writer's own first collective, which comes before the write: it orders nothing
    early = HF_CACHE.replace(
        "        if rank in [-1, 0]:\n            torch.save",
        "        if rank in [-1, 0]:\n            dist.barrier()\n            torch.save",
    ).replace("    if rank == 0:\n        dist.barrier()\n", "")
    assert [f.line for f in lint_source(early) if f.kind == "file-race"] == [15]


UNBOUND_ARG = """\
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        total = torch.ones(1)
    dist.all_reduce(total)
    dist.destroy_process_group()
"""


def test_review92l_c3_name_set_under_a_rank_if_read_as_the_collectives_own_argument() -> None:
    """review92l C3: the read is the all_reduce's own argument (the run: rank 1 raised UnboundLocalError, rank 0
    'Connection closed by peer'); its twin assigns the name on every rank."""
    [found] = lint_source(UNBOUND_ARG)
    assert found.kind == "early-exit" and found.line == 10 and "`total` is assigned only inside" in found.why
    wrapped = UNBOUND_ARG.replace("    dist.all_reduce(total)", "    dist.all_reduce(\n        total,\n    )")
    [found] = lint_source(wrapped)
    assert found.kind == "early-exit" and found.line == 10
    fixed = UNBOUND_ARG.replace("    if rank == 0:\n", "    total = torch.zeros(1)\n    if rank == 0:\n")
    assert lint_source(fixed) == []


def test_review92l_c4_name_set_under_a_test_on_the_rank_held_in_another_name() -> None:
    """review92l C4: `r = dist.get_rank()`, `if r == 0: total = 1.0`, read on every rank before a barrier."""
    source = (
        UNBOUND_ARG.replace("    rank = ", "    r = ")
        .replace("if rank == 0", "if r == 0")
        .replace("    dist.all_reduce(total)", "    x = torch.tensor([total])\n    dist.barrier()")
    )
    [found] = lint_source(source)
    assert found.kind == "early-exit" and "`total` is assigned only inside `if r == 0:`" in found.why
    assert lint_source(source.replace("    if r == 0:\n", "    total = 0.0\n    if r == 0:\n")) == []


UNANSWERED_SEND = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 2


def main():
    dist.init_process_group("gloo")
    r = dist.get_rank()
    t = torch.ones(4)
    if r == 0:
        dist.send(t, dst=1)
        dist.send(t, dst=1)
    else:
        dist.recv(t, src=0)
    print(r, "done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_review92l_c1_an_unanswered_send_fails_when_the_peer_ends_and_times_out_only_while_it_lives() -> None:
    """review92l C1: rank 1 ends its process after its one recv, and rank 0's second send then raised 'Connection
    closed by peer' at once (3 runs, 0.46-0.75 s); with rank 1 sleeping 6 s it timed out instead."""
    [found] = lint_source(UNANSWERED_SEND)
    assert (found.line, found.kind) == (13, "p2p-unmatched")
    assert "rank 0 waits here until the timeout" not in found.why
    assert "rank 0 waits here until rank 1's process ends and then fails on gloo with 'Connection closed" in found.why
    assert "until the timeout only while rank 1 stays alive" in found.why
    twin = UNANSWERED_SEND.replace("        dist.recv(t, src=0)\n", "        dist.recv(t, src=0)\n" * 2)
    assert lint_source(twin) == []


EARLY_STOP_CLASS = """\
import torch
import torch.distributed as dist


class EarlyStopping:
    def __init__(self, patience=2):
        self.patience, self.counter, self.best = patience, 0, None
        self.early_stop = False

    def __call__(self, val_loss):
        if self.best is None or val_loss < self.best:
            self.best, self.counter = val_loss, 0
        else:
            self.counter += 1
            if self.counter >= self.patience:
                self.early_stop = True


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    stopper = EarlyStopping()
    for epoch in range(20):
        t = torch.ones(1)
        dist.all_reduce(t)
        val_loss = float(torch.rand(1))
        stopper(val_loss)
        if stopper.early_stop:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_review92l_m1_a_patience_counter_in_a_class_fed_each_ranks_own_loss() -> None:
    """review92l M1: the help's patience counter, in an EarlyStopping class called with each rank's own validation
    loss (global random state seeded per rank): the run failed (rank 0's all_reduce #5 had no partner). The twin
    seeds every rank alike, and another keeps the loss out of the class's state."""
    [found] = lint_source(EARLY_STOP_CLASS)
    assert (found.line, found.kind, found.condition) == (26, "early-exit", "stopper.early_stop")
    assert lint_source(EARLY_STOP_CLASS.replace("torch.manual_seed(rank)", "torch.manual_seed(0)")) == []
    unused = (
        EARLY_STOP_CLASS.replace("or val_loss < self.best", "or epoch < 0")
        .replace("self.best, self.counter = val_loss, 0", "self.best, self.counter = 1.0, 0")
        .replace("def __call__(self, val_loss):", "def __call__(self, val_loss, epoch=0):")
    )
    assert lint_source(unused) == []


def test_review92l_m2_m3_help_states_the_code_limit_and_that_exit_status_2_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """review92l M2: a .py file under 64 MiB but over lint.MAX_CODE_CHARS characters (comments count) is refused,
    and the help says so. M3: a refused file next to a file with a finding gives exit status 2 (measured: a FIFO
    and bad1.py, rc=2), and the help says which wins."""
    help_text = " ".join(barrierlab.lint.HELP.split())
    assert "with at most 1,048,576 characters of Python code (lint.MAX_CODE_CHARS" in help_text
    assert f"{barrierlab.lint.MAX_CODE_CHARS:,}" == "1,048,576"
    assert "2 also when another file has a finding" in help_text
    monkeypatch.setattr(barrierlab.lint, "MAX_CODE_CHARS", 1000)
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" + "#" * 1100 + "\n")
    bad = tmp_path / "bad.py"
    bad.write_text(UNBOUND_ARG)
    assert main([str(big)]) == 2
    assert main([str(big), str(bad)]) == 2
    assert main([str(bad)]) == 1
    assert "more than lint analyses at once" in capsys.readouterr().err


def test_review92l_c2_a_rooted_collective_is_no_readers_collective_ahead() -> None:
    """lint92: the count of collectives ahead (review92l C2) takes only those that hold every rank until all have
    entered: the readers' broadcast from rank 1 holds them for rank 1, not for the writer, rank 0."""
    source = HF_CACHE.replace(
        "    if rank not in [-1, 0]:\n        dist.barrier()\n",
        "    if rank not in [-1, 0]:\n        dist.broadcast(torch.ones(1), src=1)\n",
    ).replace(
        "    if rank == 0:\n        dist.barrier()\n",
        "    if rank == 0:\n        dist.broadcast(torch.ones(1), src=1)\n",
    )
    assert [f.line for f in lint_source(source) if f.kind == "file-race"] == [14]


# --- lintws33: every rank's way through the file with its data evaluated, and the ranks' collectives compared

SCATTER_UNEVEN_COUNTS = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 3
FILE_SIZES = [12, 10]


def get_proc_counts(num, num_ranks):
    per_rank, remainder = divmod(num, num_ranks)
    return [per_rank + 1 if r < remainder else per_rank for r in range(num_ranks)]


def scatter_ids(num_samples):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    counts = get_proc_counts(num_samples, world_size)
    mine = torch.empty(counts[rank], dtype=torch.int64)
    pieces = None
    if rank == 0:
        perm = torch.randperm(num_samples)
        pieces = list(torch.split(perm, counts))
    dist.scatter(mine, pieces, src=0)
    return mine


def worker():
    for num_samples in FILE_SIZES:
        ids = scatter_ids(num_samples)
        stats = torch.tensor([len(ids)])
        dist.all_reduce(stats)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_evaluated_scatter_sizes_differ_between_ranks_round25() -> None:
    """lintws33, modelled on round 25's buggy_shuffle_scatter_uneven_counts (Megatron-DeepSpeed's distshuf):
    evaluated with the stated 3 ranks, the second file's 10 samples give counts (4, 3, 3), so rank 0's scatter
    output has 4 rows and the others' 3 (gloo's root raises 'invalid tensor size'). The twin pads every piece to
    max(counts) and is quiet; so is the same file with no world size stated, and one whose sizes divide evenly."""
    (found,) = lint_source(SCATTER_UNEVEN_COUNTS)
    assert (found.kind, found.line) == ("size-mismatch", 21)
    assert "with 3 ranks" in found.why and "4 rows on rank 0 and 3 rows on ranks 1, 2" in found.why
    assert "reached through lines 35, 27" in found.why and "3rd collective" in found.why
    padded = SCATTER_UNEVEN_COUNTS.replace(
        "mine = torch.empty(counts[rank], dtype=torch.int64)", "mine = torch.empty(max(counts), dtype=torch.int64)"
    ).replace("list(torch.split(perm, counts))", "[perm[:1].repeat(max(counts)) for _ in counts]")
    assert lint_source(padded) == []
    assert lint_source(SCATTER_UNEVEN_COUNTS.replace("WORLD_SIZE = 3\n", "")) == []
    assert lint_source(SCATTER_UNEVEN_COUNTS.replace("[12, 10]", "[12, 9]")) == []


EMPTY_SHARD_RAISES = """\
from itertools import islice

import torch
import torch.distributed as dist

WORLD_SIZE = 3
DOCS = [{"query": "2 + 2 =", "choices": [" 3", " 4"]}, {"query": "The sky is", "choices": [" blue", " green"]}]


class Task:
    def build_all_requests(self, rank, world_size):
        self._instances = []
        for doc_id, doc in islice(enumerate(DOCS), rank, None, world_size):
            for i, choice in enumerate(doc["choices"]):
                self._instances.append({"doc_id": doc_id, "idx": i, "cont": choice})
        if len(self._instances) == 0:
            raise ValueError("no docs")


def evaluate(task, rank, world_size):
    task.build_all_requests(rank, world_size)
    counts = [torch.zeros(1, dtype=torch.long) for _ in range(world_size)]
    dist.all_gather(counts, torch.tensor([len(task._instances)]))
    dist.barrier()


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    evaluate(Task(), rank, world_size)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_evaluated_count_when_an_empty_shard_raises_round40() -> None:
    """lintws33, modelled on round 40's buggy_lmeval_empty_rank_shard_raises (lm-evaluation-harness): evaluated
    with the stated 3 ranks, islice(enumerate(DOCS), rank, None, world_size) of 2 docs leaves rank 2 no doc, so
    it raises before the all_gather the others wait in (on gloo they fail when its process ends). Reported at the
    all_gather, the raise as its condition line. Quiet when every rank gets a doc (4 docs; the corpus twin keeps
    the raise for rank 0 only), with 2 ranks, and with no world size stated."""
    (found,) = lint_source(EMPTY_SHARD_RAISES)
    assert (found.kind, found.line, found.condition_line) == ("evaluated-count", 23, 17)
    assert "with 3 ranks" in found.why and "ranks 0, 1 make this call" in found.why
    assert "rank 2 makes 0 torch.distributed collective calls" in found.why and "raises at line 17" in found.why
    assert "rank 2 runs 0 iterations and ranks 0, 1 run 1 iteration" in found.why
    three_docs = EMPTY_SHARD_RAISES.replace('"choices": [" blue", " green"]}]', '"choices": [" blue", " green"]}] * 2')
    assert lint_source(three_docs) == []
    assert lint_source(EMPTY_SHARD_RAISES.replace("WORLD_SIZE = 3", "WORLD_SIZE = 2")) == []
    assert lint_source(EMPTY_SHARD_RAISES.replace("WORLD_SIZE = 3\n", "")) == []


SCATTER_FEWER_CHUNKS = """\
import math

import torch.distributed as dist

WORLD_SIZE = 3
PROMPT_FILES = {"dev": [f"dev {i}" for i in range(9)], "test": [f"test {i}" for i in range(4)]}


def split_for_ranks(prompts, world_size):
    per_rank = math.ceil(len(prompts) / world_size)
    return [prompts[i : i + per_rank] for i in range(0, len(prompts), per_rank)]


def run_file(name, prompts):
    rank, world = dist.get_rank(), dist.get_world_size()
    chunk = [None]
    dist.scatter_object_list(chunk, split_for_ranks(prompts, world) if rank == 0 else None, src=0)
    answers = [p.upper() for p in chunk[0]]
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(answers, gathered, dst=0)


def worker():
    for name, prompts in PROMPT_FILES.items():
        run_file(name, prompts)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_evaluated_count_when_the_scatter_list_is_short_round15() -> None:
    """lintws33, modelled on round 15's buggy_scatter_prompts_fewer_chunks: evaluated with the stated 3 ranks, the
    "test" file's 4 prompts in ceil(4 / 3) = 2 per chunk give 2 chunks; rank 0, the root, raises in its
    scatter_object_list (gloo: 'Incorrect input list size 2'), which ranks 1 and 2 wait in. The "dev" file (9 = 3
    x 3) goes through: its chunk reaches each rank (rank 0's scatter handed to the ranks traced after it), so the
    trace follows them to the second file. One chunk per rank (as correct_scatter_prompts_one_chunk_per_rank) is
    quiet."""
    (found,) = lint_source(SCATTER_FEWER_CHUNKS)
    assert (found.kind, found.line, found.condition_line) == ("evaluated-count", 17, 17)
    assert "ranks 1, 2 make this call" in found.why and "3rd collective" in found.why
    assert "raises in this same call (torch: 'Incorrect input list size 2" in found.why
    even = SCATTER_FEWER_CHUNKS.replace(
        "return [prompts[i : i + per_rank] for i in range(0, len(prompts), per_rank)]",
        "return [prompts[r::world_size] for r in range(world_size)]",
    )
    assert lint_source(even) == []


LRU_CACHED_COLLECTIVE = """\
import functools

import torch
import torch.distributed as dist

WORLD_SIZE = 2
PROMPT_LENGTHS = {0: [[3, 5], [8, 9], [4, 5], [7, 10]], 1: [[4, 6], [9, 10], [6, 6], [10, 8]]}


@functools.lru_cache(maxsize=None)
def padded_length(local_max):
    t = torch.tensor([local_max])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def gather_padded(n, length):
    batch = torch.zeros(n, length)
    parts = [torch.empty_like(batch) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, batch)


def evaluate(rank):
    padded_length.cache_clear()
    for step in range(4):
        lengths = PROMPT_LENGTHS[rank][step]
        length = padded_length(max(lengths))
        gather_padded(len(lengths), length)
        if rank == 0:
            print(step, length)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    evaluate(dist.get_rank())
    dist.destroy_process_group()
"""


def test_evaluated_count_through_an_lru_cache_round28() -> None:
    """lintws33, modelled on round 28's buggy_pad_length_lru_cache_keyed_by_local_max: padded_length() is
    lru_cache'd and makes an all_reduce; keyed by each rank's own max length (5, 9, 5, 10 on rank 0; 6, 10, 6, 10 on
    rank 1) the cache misses 3 times on rank 0 and twice on rank 1, so at the 6th collective rank 0's all_reduce
    meets rank 1's all_gather (on gloo both time out). Both calls are reported, the cached call where the ranks
    part as their condition line (the `if rank == 0:` logging branch is not where they part). Keyed by the step
    (the same on every rank), quiet; and an unknown decorator stops the trace (quiet)."""
    found = lint_source(LRU_CACHED_COLLECTIVE)
    assert [(f.kind, f.line, f.condition_line) for f in found] == [
        ("evaluated-count", 13, 27),
        ("evaluated-count", 20, 27),
    ]
    assert "finds its arguments in the cache on rank 1, which skip its body, and not on rank 0" in found[0].why
    assert lint_source(LRU_CACHED_COLLECTIVE.replace("padded_length(max(lengths))", "padded_length(step)")) == []
    assert lint_source(LRU_CACHED_COLLECTIVE.replace("@functools.lru_cache(maxsize=None)", "@my_decorator")) == []


AGREED_PARTITIONS = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 2
MAX_TOKENS = 8
ROLLOUTS = {0: [[1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6, 7], [3, 4, 5, 6, 7, 8]], 1: [[9, 10], [11, 12, 1], [4, 2]]}


def first_fit(lengths, cap):
    bins, sums = [], []
    for i, n in enumerate(lengths):
        for b in range(len(bins)):
            if sums[b] + n <= cap:
                bins[b].append(i)
                sums[b] += n
                break
        else:
            bins.append([i])
            sums.append(n)
    return bins


def train_step(rollouts):
    lengths = [len(r) for r in rollouts]
    count = torch.tensor([len(first_fit(lengths, MAX_TOKENS))])
    dist.all_reduce(count, op=dist.ReduceOp.MAX)
    bins = first_fit(lengths, MAX_TOKENS)
    partitions = bins + [[] for _ in range(int(count.item()) - len(bins))]
    for partition in partitions:
        if not partition:
            continue
        grad = torch.ones(4)
        dist.all_reduce(grad)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    train_step(ROLLOUTS[dist.get_rank()])
    dist.destroy_process_group()
"""


def test_evaluated_count_after_an_all_reduced_partition_count_round40() -> None:
    """lintws33, modelled on round 40's buggy_slime_capped_partitions_empty_microbatch: each rank's first-fit bins
    (3 on rank 0, 1 on rank 1) are counted, the count MAX-all-reduced (the evaluator hands every rank the result on
    a second pass, since it saw every rank's number), and the light rank pads its partitions with empty ones. A
    rank that skips its empty partitions makes 1 all_reduce where rank 0 makes 3: reported at that all_reduce, the
    `if not partition:` as where the ranks' ways part (after their 1st collective). Every rank running one per
    partition is quiet."""
    (found,) = lint_source(AGREED_PARTITIONS)
    assert (found.kind, found.line, found.condition_line) == ("evaluated-count", 33, 30)
    assert "rank 0 makes this call" in found.why and "rank 1 makes 2 torch.distributed collective calls" in found.why
    assert "the test at line 30 (`not partition`) is true on rank 1 and not on rank 0" in found.why
    assert lint_source(AGREED_PARTITIONS.replace("        if not partition:\n            continue\n", "")) == []


def test_store_key_set_by_append_is_set_review93l_c2() -> None:
    """review93l C2 (p82): `store.append("log", ...)` creates the key when it is missing (run on 2 ranks: both
    printed b'r0;r1;' and finished), so the later store.wait/get of "log" is not a key "never set". The same reads of
    a key nothing appends to are still reported; a list's append of the key's text sets nothing."""
    appended = """\
        import torch.distributed as dist

        def work(store, rank):
            store.append("log", f"r{rank};")
            dist.barrier()
            store.wait(["log"])
            return store.get("log")
        """
    assert _kinds(appended) == []
    assert _kinds(appended.replace('store.append("log"', 'store.append("other"')) == [
        (6, "store-key"),
        (7, "store-key"),
    ]
    as_list = appended.replace('store.append("log", f"r{rank};")', 'names.append("log")')
    assert _kinds(as_list) == [(6, "store-key"), (7, "store-key")]


def test_size_mismatch_says_what_an_all_gather_returns_review93l_m1() -> None:
    """review93l M1 (p30, p79, x02): an all_gather of each rank's `nonzero()` was said to return "values that were
    not reduced", but an all_gather reduces nothing. Run on 2 ranks (rank 0 gathers 2 elements, rank 1 one): rank 1
    aborted, rank 0 once finished with rank 1's slot holding [0.0, 2.3e-41] (rank 1's 2.0 never arrived). The
    all_gather's sentence says that; the all_reduce twin keeps "not reduced"; a fixed size is quiet."""
    source = """\
import torch
import torch.distributed as dist

def hits(batch, world):
    found = {found}
    out = [torch.zeros_like(found) for _ in range(world)]
    dist.all_gather(out, found)
    return out
"""
    [gathered] = lint_source(source.format(found="(batch > 0).nonzero()"))
    assert (gathered.line, gathered.kind) == (7, "size-mismatch")
    assert "not reduced" not in gathered.why and "does not hold what that rank sent" in gathered.why, gathered.why
    [reduced] = lint_source(
        source.format(found="(batch > 0).nonzero()").replace("dist.all_gather(out, found)", "dist.all_reduce(found)")
    )
    assert reduced.kind == "size-mismatch" and "returns values that were not reduced" in reduced.why, reduced.why
    assert lint_source(source.format(found="(batch > 0).sum().reshape(1)")) == []


REMOVED_THEN_PRINTED = """\
import os
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    path = "/tmp/ck32.pt"
    if rank == 0:
        torch.save({{"a": 1}}, path)
    dist.barrier()
{remove}
    if rank != 0:
        print(rank, torch.load(path))
"""


def test_removed_before_read_sees_a_read_inside_a_print_review93l_c1() -> None:
    """review93l C1 (p32): rank 0 removes the file, a barrier, then rank 1's `print(rank, torch.load(path))`. Run on
    2 ranks: rank 1 raised FileNotFoundError. The read raises inside a print as anywhere else: reported at the
    barrier. The twin that removes the file only after a barrier that follows the read is quiet."""
    buggy = REMOVED_THEN_PRINTED.format(remove="    if rank == 0:\n        os.remove(path)\n    dist.barrier()")
    [found] = [f for f in lint_source(buggy) if f.kind == "removed-before-read"]
    assert (found.line, found.condition_line) == (15, 14), found
    assert "line 17 (`torch.load`)" in found.why, found.why
    correct = (
        REMOVED_THEN_PRINTED.format(remove="") + "    dist.barrier()\n    if rank == 0:\n        os.remove(path)\n"
    )
    assert [f for f in lint_source(correct) if f.kind == "removed-before-read"] == []
