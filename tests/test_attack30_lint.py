"""attack30's lint repro (``attacks30/a10``: lint's time on a 400-case ``if r == 0 ... elif r == i:`` rank
dispatch, cubic in the cases, and on a 4,000-deep ``a.b.b...`` chain, quadratic in its depth), fixed: each
exited 1 before its fix. Focused tests of what the fix keeps: the findings of such chains, and the names of
attribute chains."""

from __future__ import annotations

import ast
import time
from pathlib import Path

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
