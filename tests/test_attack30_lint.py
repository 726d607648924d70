"""attack30's lint repro (``attacks30/a10``: lint's time on a 400-case ``if r == 0 ... elif r == i:`` rank
dispatch, cubic in the cases, and on a 4,000-deep ``a.b.b...`` chain, quadratic in its depth), fixed: each
exited 1 before its fix. Focused tests of what the fix keeps: the findings of such chains, and the names of
attribute chains."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest
from repros import fixed_attacks

from barrierlab.lint import MAX_DOTTED_DEPTH, _dotted, lint_source

ATTACKS = Path(__file__).resolve().parent.parent / "attacks30"

FIXED = ["a10_lint_superlinear"]


test_the_attack_no_longer_breaks_its_promise = fixed_attacks(ATTACKS, FIXED)

HEAD = "import torch.distributed as dist\n"


def _dispatch(n: int, first: str = "pass", last: str = "") -> str:
    cases = "".join(f"    elif r == {i}:\n        dist.barrier()\n" for i in range(1, n))
    return f"{HEAD}def f(x):\n    r = dist.get_rank()\n    if r == 0:\n        {first}\n{cases}{last}"


def test_an_unbalanced_dispatch_still_reports_every_case():
    findings = lint_source(_dispatch(60), "d.py")
    assert len(findings) == 59
    assert {f.kind for f in findings} == {"branch"}


def test_a_balanced_dispatch_stays_quiet():
    source = _dispatch(60, first="dist.barrier()", last="    else:\n        dist.barrier()\n")
    assert lint_source(source, "d.py") == []


def test_a_case_that_returns_is_still_an_early_exit():
    source = _dispatch(40, first="dist.barrier()", last="    else:\n        return 1\n    dist.all_reduce(x)\n")
    findings = lint_source(source, "d.py")
    assert any(f.kind == "early-exit" and "all_reduce" in f.collective for f in findings)


def test_a_balanced_dispatch_takes_about_linear_time():
    def cpu(n: int) -> float:
        source = HEAD + "r = dist.get_rank()\nif r == 0:\n    dist.barrier()\n"
        source += "".join(f"elif r == {i}:\n    dist.barrier()\n" for i in range(1, n)) + "else:\n    dist.barrier()\n"
        start = time.process_time()
        assert lint_source(source, "d.py") == []
        return time.process_time() - start

    small, large = cpu(100), cpu(400)
    assert large < 2 + 8 * small  # cubic was 64 times, quadratic 16 times


def test_dotted_names_of_attribute_chains():
    assert _dotted(ast.parse("a.b.c", mode="eval").body) == "a.b.c"
    assert _dotted(ast.parse("f().b", mode="eval").body) is None
    deep = ast.parse("a" + ".b" * MAX_DOTTED_DEPTH, mode="eval").body
    assert _dotted(deep) == "a" + ".b" * MAX_DOTTED_DEPTH
    assert _dotted(deep.value) == "a" + ".b" * (MAX_DOTTED_DEPTH - 1)  # kept names of the inner nodes agree
    too_deep = ast.parse("a" + ".b" * (MAX_DOTTED_DEPTH + 1), mode="eval").body
    assert _dotted(too_deep) is None
    assert _dotted(too_deep.value) == "a" + ".b" * MAX_DOTTED_DEPTH


def dispatch_in_function(n: int) -> str:
    """The shape lintquad29 made about linear: a rank dispatch inside a function, ``rank == i`` for i < n, a
    ``return`` in each case, a barrier in every other one, and a collective after the chain."""
    source = f"{HEAD}\n\ndef main(x):\n    rank = dist.get_rank()\n    if rank == 0:\n        dist.barrier()\n        return\n"
    for i in range(1, n):
        work = "        dist.barrier()\n" if i % 2 else "        x = x + 1\n"
        source += f"    elif rank == {i}:\n{work}        return\n"
    return source + "    dist.all_reduce(x)\n"


def test_a_dispatch_inside_a_function_takes_about_linear_time():
    def cpu(n: int) -> float:
        source = dispatch_in_function(n)
        start = time.process_time()
        findings = lint_source(source, "d.py")
        spent = time.process_time() - start
        assert len(findings) == n // 2 + 2  # a branch for each barrier, the all_reduce's early exit (+ rank 0's)
        return spent

    small, large = cpu(200), cpu(800)
    assert large < 2 + 8 * small  # quadratic was 16 times (200 cases 2.7 s, 800 cases 23 s), cubic 64


def _blocks(n: int, block) -> str:
    return HEAD + "import os\n\n\ndef f(store, rank):\n" + "".join(block(i) for i in range(n))


#: Functions of n blocks each with a rank-dependent collective (lintperf32): attack31 a10's
#: ``try: v = open(p).read()`` / ``except OSError: v = None`` / ``if v is None: dist.barrier()`` (a regular
#: expression per finding and per except-handler flag, quadratic, and past 512 names no longer in ``re``'s cache:
#: 20 s at 1,000 blocks, 72 s at 2,000), the same with ``with open(p) as fh``, a flag set in an except handler, an
#: early return under a rank test (each finding walked the whole tree for the exit's unit: 14 s at 2,000), a store
#: ``get``, ``os.path.exists``, and loops each left by ``break`` on ``rank == i`` (every rank value a world of
#: every loop: quadratic up to 4,096 values).
LINEAR_SHAPES = {
    "open": lambda i: (
        f"    try:\n        v{i} = open('p{i}').read()\n    except OSError:\n        v{i} = None\n"
        f"    if v{i} is None:\n        dist.barrier()\n"
    ),
    "with-open": lambda i: (
        f"    try:\n        with open('p{i}') as fh{i}:\n            v{i} = fh{i}.read()\n"
        f"    except OSError:\n        v{i} = None\n    if v{i} is None:\n        dist.barrier()\n"
    ),
    "handler-flag": lambda i: (
        f"    failed{i} = False\n    try:\n        store.work({i})\n    except ValueError:\n"
        f"        failed{i} = True\n    if failed{i}:\n        dist.barrier()\n"
    ),
    "rank-return": lambda i: f"    if rank == {i} and store.done({i}):\n        return\n    dist.barrier()\n",
    "store-get": lambda i: (
        f"    try:\n        v{i} = store.get('k{i}')\n    except Exception:\n        v{i} = None\n"
        f"    if v{i} is None:\n        dist.barrier()\n"
    ),
    "exists": lambda i: f"    ok{i} = os.path.exists('p{i}')\n    if ok{i}:\n        dist.barrier()\n",
    "loop-break": lambda i: (
        f"    for s{i} in range(3):\n        if rank == {i}:\n            break\n        dist.all_reduce(store)\n"
    ),
}


@pytest.mark.parametrize("shape", sorted(LINEAR_SHAPES))
def test_blocks_of_rank_dependent_collectives_take_about_linear_time(shape):
    def cpu(n: int) -> float:
        source = _blocks(n, LINEAR_SHAPES[shape])
        start = time.process_time()
        findings = lint_source(source, "d.py")
        spent = time.process_time() - start
        assert len(findings) >= n  # each block's collective is reported
        return spent

    small, large = cpu(150), cpu(600)
    assert large < 2 + 8 * small  # linear is 4 times, quadratic 16 times


def test_lint_source_parses_a_deep_dispatch_on_the_deep_stack():
    """lint_source parsed outside the deep-stack retry, so 3,200 cases raised RecursionError from ast.parse
    (lintquad29); the command line did not."""
    assert len(lint_source(dispatch_in_function(3200), "d.py")) == 3200 // 2 + 2


def test_the_taint_before_a_test_is_what_it_was(monkeypatch):
    """rank_before (two sweeps per function) against taint_before (the taint recomputed for each test): equal
    for every test, including one where a call after the test counts (``out.append`` under the other branch,
    :class:`_PrefixTaint`) and the two sweeps disagree."""
    import barrierlab.lint as lint

    asked, exact = [], []
    swept, recomputed = lint._Analysis.rank_before, lint._Analysis.taint_before

    def checked(self, key, test, laundered):
        got = swept(self, key, test, laundered)
        before = recomputed(self, key, test.lineno)
        asked.append((got, before is None or self.mentions_rank(test, before, laundered)))
        return got

    def counted(self, key, line):
        exact.append(line)
        return recomputed(self, key, line)

    monkeypatch.setattr(lint._Analysis, "rank_before", checked)
    monkeypatch.setattr(lint._Analysis, "taint_before", counted)
    late = (
        f"{HEAD}def main(x, y, out):\n    if dist.get_rank() == 0:\n        if out:\n            dist.barrier()\n"
        "    else:\n        out.append(1)\n    out = dist.get_rank()\n    if y == 1:\n        dist.barrier()\n"
    )
    before_assigned = f"{HEAD}def main(x, y):\n    if y == 1:\n        dist.barrier()\n    y = dist.get_rank()\n"
    mutated = (
        f"{HEAD}def main(x, out):\n    r = dist.get_rank()\n    seen = []\n    if r == 0:\n        seen.append(1)\n"
        "    if seen:\n        dist.barrier()\n    if out:\n        dist.barrier()\n    if r > 1:\n        out.append(2)\n"
    )
    for source in (late, before_assigned, mutated, _dispatch(30), dispatch_in_function(30)):
        lint_source(source, "d.py")
    assert asked and all(got == want for got, want in asked)
    assert exact  # the late shape needed the recomputed taint
