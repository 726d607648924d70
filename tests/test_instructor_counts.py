"""The instructor notes' counts of tested answers are the tests' own: each "Accepted (N)", "N answers" or
"the eight that pass" a note quotes is the length of the list of right or wrong answers in the exercise's test
file (review15a/b: three notes quoted counts the lists no longer had)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTES = ROOT / "notebooks" / "instructor"
WORDS = {"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}

#: (note, the quoted count's pattern, test file, the list it counts)
COUNTS = [
    ("03_deadlocks.md", r"tested in `tests/test_exercises_nb03\.py`, (\d+) answers", "test_exercises_nb03.py", "RIGHT"),
    ("03_deadlocks.md", r"Rejected \((\d+)\)", "test_exercises_nb03.py", "WRONG"),
    ("04_debugging_toolkit.md", r"`tests/test_exercises_nb04\.py`, (\d+) answers", "test_exercises_nb04.py", "WRONG"),
    ("04_debugging_toolkit.md", r"Accepted \((\d+)\)", "test_exercises_nb04.py", "RIGHT"),
    ("06_implicit_sync_and_alternatives.md", r"Rejected \((\d+) answers\)", "test_exercises_nb06.py", "WRONG"),
    ("06_implicit_sync_and_alternatives.md", r"Accepted \((\d+)\)", "test_exercises_nb06.py", "RIGHT"),
    ("07_barrier_as_a_debugging_tool.md", r"lists the (\w+) that pass", "test_exercises_nb07.py", "RIGHT"),
    ("08_capstone.md", r"`tests/test_exercises_nb08\.py`\): (\w+) right fixes", "test_exercises_nb08.py", "CORRECT"),
]


def _length(test_file: str, name: str) -> int:
    tree = ast.parse((ROOT / "tests" / test_file).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                return len(node.value.elts)
            if isinstance(node.value, ast.Dict):
                return len(node.value.keys)
    raise AssertionError(f"{test_file} has no literal list {name}")


@pytest.mark.parametrize("note, pattern, test_file, name", COUNTS, ids=[f"{c[0]}:{c[3]}" for c in COUNTS])
def test_the_note_quotes_the_tests_count(note, pattern, test_file, name):
    text = " ".join((NOTES / note).read_text().split())  # a count may be broken over two lines
    found = re.search(pattern, text)
    assert found, f"{note} no longer says {pattern!r}: update COUNTS"
    quoted = found.group(1)
    number = int(quoted) if quoted.isdigit() else WORDS[quoted]
    assert number == _length(test_file, name), (
        f"{note} quotes {quoted}; {test_file} {name} has {_length(test_file, name)}"
    )


def test_the_capstone_note_counts_the_wrong_fixes_the_tests_reject():
    """08's wrong fixes are one test each (a test asserting ``not verdict.ok``), not a list: the note's "ten
    wrong ones" is their number (review21b: it said nine after a tenth was added)."""
    tree = ast.parse((ROOT / "tests" / "test_exercises_nb08.py").read_text())
    rejecting = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("test_")
        and any(
            isinstance(n, ast.UnaryOp)
            and isinstance(n.op, ast.Not)
            and isinstance(n.operand, ast.Attribute)
            and n.operand.attr == "ok"
            for n in ast.walk(node)
        )
    ]
    text = " ".join((NOTES / "08_capstone.md").read_text().split())
    found = re.search(r"\) and (\w+) wrong ones", text)
    assert found, "08_capstone.md no longer says 'and N wrong ones'"
    assert WORDS[found.group(1)] == len(rejecting), (found.group(1), rejecting)
