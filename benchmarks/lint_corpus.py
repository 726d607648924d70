"""Lint every real-world item (tests/realworld/ and every round folder) in this process and print lint's figures
per range of rounds: recall (buggy items with a finding at a ``# BUG`` or ``# WAITS`` line, or whose finding's
condition line is one) and false-positive files (correct items with any finding). The figures the "At the end of
session ..." paragraphs of docs/realworld.md give are counted this way.

    PYTHONPATH=src python benchmarks/lint_corpus.py [--json OUT.json] [--ranges 12-47 48-49 1-50]
                                                    [--compare BEFORE.json]

``--json`` keeps one record per item (its round, kind, the marked lines flagged, every finding as ``line:kind``);
``--compare`` lists, against such a file from another commit, the items whose verdict changed (recall gained or
lost, false-positive files new or gone). The first corpus (tests/realworld/*.py) counts as round 1. benchmarks/
realworld.py judges lint the same way through the command line, one folder at a time, with the other tools.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import realworld  # noqa: E402

from barrierlab.lint import lint_file  # noqa: E402


def round_of(path: Path) -> int:
    name = path.parent.name
    return int(name[5:]) if name.startswith("round") else 1


def lint_all() -> dict[str, dict]:
    folders = [realworld.REALWORLD] + sorted(
        p for p in realworld.REALWORLD.iterdir() if p.is_dir() and p.name.startswith("round")
    )
    out: dict[str, dict] = {}
    for item in realworld.discover(folders):
        findings = lint_file(item.path)
        flagged = {f.line for f in findings} | {f.condition_line for f in findings if f.condition_line is not None}
        out[str(item.path.relative_to(ROOT))] = {
            "round": round_of(item.path),
            "correct": item.kind == "correct",
            "named": sorted(flagged & item.lines),
            "findings": [f"{f.line}:{f.kind}" for f in findings],
        }
    return out


def figures(records: dict[str, dict], lo: int, hi: int) -> str:
    chosen = [r for r in records.values() if lo <= r["round"] <= hi]
    buggy = [r for r in chosen if not r["correct"]]
    correct = [r for r in chosen if r["correct"]]
    found = sum(bool(r["named"]) for r in buggy)
    noisy = sum(bool(r["findings"]) for r in correct)
    share = f" ({100 * found / len(buggy):.1f} %)" if buggy else ""
    return f"rounds {lo}-{hi}: recall {found}/{len(buggy)}{share}, false-positive files {noisy}/{len(correct)}"


def changes(before: dict[str, dict], after: dict[str, dict]) -> list[str]:
    lines = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name, {}), after.get(name, {})
        if not old or not new:
            lines.append(f"{'new' if new else 'gone'} item: {name}")
        elif new["correct"] and bool(old["findings"]) != bool(new["findings"]):
            lines.append(f"false alarm {'gone' if old['findings'] else 'new'}: {name} {new['findings']}")
        elif not new["correct"] and bool(old["named"]) != bool(new["named"]):
            lines.append(f"recall {'lost' if old['named'] else 'gained'}: {name}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write one record per item here")
    parser.add_argument("--ranges", nargs="+", default=["12-47", "48-49", "1-99"], help="LO-HI rounds to report")
    parser.add_argument("--compare", type=Path, help="a --json file of another commit: list what changed")
    args = parser.parse_args()
    started = time.process_time()
    records = lint_all()
    print(f"{len(records)} items linted in {time.process_time() - started:.1f} s of CPU")
    for span in args.ranges:
        lo, _, hi = span.partition("-")
        print(figures(records, int(lo), int(hi or lo)))
    if args.json:
        args.json.write_text(json.dumps(records, indent=1) + "\n")
    if args.compare:
        print("\n".join(changes(json.loads(args.compare.read_text()), records)) or "no verdict changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
