"""Run the real-world items (tests/realworld/ and tests/realworld/round2/, or the folders given) through each
tool — ``bl.run``, the CLI ``barrierlab run``, ``barrierlab lint`` and plain ``torchrun`` as the baseline —
and print one row per item and run, then one table per tool.

    PYTHONPATH=src python benchmarks/realworld.py [--folder tests/realworld/round2] [--tools lab cli lint torchrun]
                                                  [--reps 2] [--only SUBSTRING ...]

Per tool, over the items it ran (an item whose ``REQUIRES`` library is not installed is skipped and counted,
except by lint, which only reads the source):

* **correct finishing** — correct items that finished on every rank in every repetition;
* **false diagnoses** — correct items that finished but got another diagnosis than "all ranks finished"
  (``bl.run``: a diagnosis kind other than ``ok``; the CLI: a first diagnosis line other than
  "All N ranks finished"), e.g. a mismatch diagnosis on correct subgroup code;
* **lint false-positive files** — correct items with at least one lint finding;
* **buggy bounded** — buggy items that ended within their bound in every repetition (``bl.run`` and the CLI:
  the deadline plus 10 s; torchrun: the job's wall-clock bound, after which its session is killed by PID);
* **blind** — buggy items whose headline names no source line (``file.py:N``) and no collective
  (barrier, all_reduce, ...): e.g. "did not finish, but every rank made the same collective calls";
* **named** — buggy items whose output names a ``# BUG`` or ``# WAITS`` line of the item as ``file:line``
  (torchrun: a traceback frame ``File "item.py", line N`` counts as well);
* **lint recall** — buggy items with a lint finding at a ``# BUG`` or ``# WAITS`` line.

With ``--reps`` > 1, ``bl.run``, the CLI and torchrun run every item that many times; an item counts as
finishing (or bounded, named, not blind) only if it did in every repetition, and items whose verdict differs
between repetitions are listed as flips. torchrun jobs run in a private network namespace (root, unshare and ip).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REALWORLD = ROOT / "tests" / "realworld"
sys.path.insert(0, str(REALWORLD))
sys.path.insert(0, str(REALWORLD / "round2"))

import _harness as harness  # noqa: E402
import _round2 as round2  # noqa: E402

TOOLS = ("lab", "cli", "lint", "torchrun")
TOOL_NAMES = {"lab": "bl.run", "cli": "barrierlab run", "lint": "barrierlab lint", "torchrun": "torchrun"}
#: Wall time a CLI job gets beyond its deadline: a fresh interpreter importing torch and starting the warm
#: process on a loaded 2-core machine (measured 60-80 s at a load average of 16).
CLI_STARTUP = 150.0
OPS = re.compile(
    r"\b(barrier|monitored_barrier|all_reduce|all_gather\w*|broadcast\w*|reduce_scatter\w*|gather\w*|scatter\w*|"
    r"all_to_all\w*|send|recv|isend|irecv|reduce|new_group)\b"
)
LOCATION = re.compile(r"\.py:\d+")


@dataclass
class Verdict:
    finished: bool | None = None  # every rank finished (lint: None)
    bounded: bool = True
    false_diagnosis: bool = False
    blind: bool = False
    named: set[int] = field(default_factory=set)
    findings: list[int] = field(default_factory=list)  # lint: the lines flagged
    headline: str = ""
    elapsed: float = 0.0
    note: str = ""


def corpus_of(item: harness.Item):
    """The harness module that runs an item: the first corpus's, or round 2's (its own path, no stand-ins)."""
    return harness if item.path.parent == REALWORLD else round2


def discover(folders: list[Path]) -> list[harness.Item]:
    items = []
    for folder in folders:
        items += harness.discover() if folder.resolve() == REALWORLD else round2.discover(folder.resolve())
    return items


def lines_named(text: str, item: harness.Item) -> set[int]:
    name = re.escape(item.path.name)
    found = {int(n) for n in re.findall(rf"{name}:(\d+)", text)}
    found |= {int(n) for n in re.findall(rf'{name}", line (\d+)', text)}
    return found & item.lines


def is_blind(headline: str) -> bool:
    return not LOCATION.search(headline) and not OPS.search(headline)


def python_path(item: harness.Item) -> str:
    parts = [str(item.path.parent), str(ROOT / "src")]
    if corpus_of(item) is harness:
        parts.insert(0, str(harness.STANDINS))
    last = [str(harness.STANDINS)] if item.path.parent != round2.HERE and corpus_of(item) is not harness else []
    # PYTHONPATH comes before site-packages: a later round's stand-ins are there only for what is not installed
    last = [p for p in last if not _installed_standin(item)]
    return os.pathsep.join(filter(None, [*parts, os.environ.get("PYTHONPATH"), *last]))


def _installed_standin(item: harness.Item) -> bool:
    """Whether a library of ``_standins`` that ``item`` imports is installed (then the real one must win)."""
    from importlib.machinery import PathFinder

    text = item.path.read_text()
    names = [p.name for p in harness.STANDINS.iterdir() if p.is_dir()]
    real = [p for p in sys.path if p != str(harness.STANDINS)]
    return any(
        re.search(rf"^\s*(from|import)\s+{n}\b", text, re.M) and PathFinder.find_spec(n, real) is not None
        for n in names
    )


def run_bounded(command: list[str], item: harness.Item, wall: float) -> tuple[int | None, str, float]:
    """Run ``command`` in its own session, killed by its PID's process group after ``wall`` seconds; its
    stdout (what the tool reports; stderr, where ranks' stack dumps may land, is dropped)."""
    env = dict(os.environ, PYTHONPATH=python_path(item), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    start = time.monotonic()
    process = subprocess.Popen(
        command,
        env=env,
        cwd=item.path.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=wall)
        return process.returncode, output, time.monotonic() - start
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output, time.monotonic() - start


def lab_deadline(item: harness.Item) -> float:
    return round2.lab_deadline(item) if corpus_of(item) is round2 else item.timeout + harness.LAB_MARGIN


def judge_lab(item: harness.Item) -> Verdict:
    o = corpus_of(item).run_in_lab(item)
    return Verdict(
        o.ok,
        o.bounded,
        item.kind == "correct" and o.ok and o.kind != "ok",
        item.kind == "buggy" and is_blind(o.headline),
        set(o.named_lines),
        [],
        o.headline,
        o.elapsed,
    )


def judge_cli(item: harness.Item) -> Verdict:
    if item.self_init:
        return Verdict(note="n/a: the script starts its own ranks with mp.spawn")
    deadline = lab_deadline(item)
    command = [
        sys.executable,
        "-m",
        "barrierlab",
        "run",
        str(item.path),
        "-n",
        str(item.world_size),
        "--timeout",
        str(item.timeout),
        "--deadline",
        str(deadline),
    ]
    code, output, elapsed = run_bounded(command, item, deadline + CLI_STARTUP)
    # stdout: the run (its "Run(" line, one line per rank, what the ranks printed), a blank line, the diagnosis
    # (no blank line inside it), a blank line, the ledger ("#  rank 0 ..."): the headline is the first line of
    # the paragraph before the ledger, whatever blank lines the ranks' own output had
    parts = re.split(r"\n\n#\s+rank 0", output.split("Run(", 1)[-1], maxsplit=1)
    paragraphs = [p for p in parts[0].split("\n\n") if p.strip()]
    if len(parts) == 1 and paragraphs:  # no table: the ledger is its one-line note, the last paragraph
        paragraphs.pop()
    headline = paragraphs[-1].strip().splitlines()[0] if len(paragraphs) > 1 else ""
    finished = code == 0
    return Verdict(
        finished,
        code is not None and elapsed <= deadline + CLI_STARTUP,
        item.kind == "correct" and finished and not headline.startswith(f"All {item.world_size} ranks"),
        item.kind == "buggy" and is_blind(headline),
        lines_named(output, item),
        [],
        headline,
        elapsed,
        "" if code is not None else "killed at the wall-clock bound",
    )


def judge_lint(item: harness.Item) -> Verdict:
    command = [sys.executable, "-m", "barrierlab", "lint", str(item.path)]
    code, output, elapsed = run_bounded(command, item, CLI_STARTUP)
    flagged = [int(n) for n in re.findall(rf"^\S*{re.escape(item.path.name)}:(\d+):", output, re.M)]
    # a finding's condition line counts too, as tests/realworld/_harness.py's lint_item counts it: the `if` that
    # decides which ranks reach the call is often the bug ("condition: rank == 0 (line 90)")
    own = rf"^\S*{re.escape(item.path.name)}:\d+:.*\n    condition: .* \(line (\d+)\)$"  # of the item's file
    conditions = [int(n) for n in re.findall(own, output, re.M)]
    return Verdict(None, code is not None, False, False, set(flagged + conditions) & item.lines, flagged, "", elapsed)


def judge_torchrun(item: harness.Item) -> Verdict:
    corpus = corpus_of(item)
    wall = round2.script_deadline(item) if corpus is round2 else harness.SCRIPT_DEADLINE
    o = corpus.run_as_script(item)
    note = "killed at the wall-clock bound" if o.returncode is None else f"rc={o.returncode}"
    if "terminate called without an active exception" in o.output:
        note += ", torch teardown abort"
    return Verdict(
        o.returncode == 0,
        o.returncode is not None,
        False,
        False,
        lines_named(o.output, item),
        [],
        "",
        o.elapsed,
        note + f" (bound {wall:.0f} s)",
    )


JUDGES = {"lab": judge_lab, "cli": judge_cli, "lint": judge_lint, "torchrun": judge_torchrun}


def describe(item: harness.Item, tool: str, v: Verdict) -> str:
    if v.note.startswith("n/a"):
        return v.note
    if tool == "lint":
        at = ",".join(map(str, sorted(v.named))) or "no marked line"
        return f"{len(v.findings)} findings" + (f", at {at}" if item.kind == "buggy" else "")
    parts = [f"{'finished' if v.finished else 'not finished'}", f"{v.elapsed:.1f}s"]
    if not v.bounded:
        parts.append("UNBOUNDED")
    if v.false_diagnosis:
        parts.append("FALSE DIAGNOSIS")
    if item.kind == "buggy":
        parts.append("named " + (",".join(map(str, sorted(v.named))) or "no"))
        if v.blind:
            parts.append("BLIND")
    if v.note:
        parts.append(v.note)
    text = "; ".join(parts)
    if v.headline and (v.false_diagnosis or v.blind or tool != "torchrun"):
        text += f"\n{'':<52}{v.headline[:160]}"
    return text


def key(v: Verdict) -> tuple:
    return (v.finished, v.bounded, v.false_diagnosis, v.blind, bool(v.named))


def table(tool: str, items: list[harness.Item], verdicts: dict, skipped: int) -> None:
    ran = [i for i in items if i.name in verdicts and not verdicts[i.name][0].note.startswith("n/a")]
    correct = [i for i in ran if i.kind == "correct"]
    buggy = [i for i in ran if i.kind == "buggy"]
    reps = {len(verdicts[i.name]) for i in ran}

    def every(i, test):
        return all(test(v) for v in verdicts[i.name])

    def share(n, d):
        return f"{n}/{d}" + (f" ({100 * n / d:.0f} %)" if d else "")

    print(
        f"\n{TOOL_NAMES[tool]}: {len(correct)} correct and {len(buggy)} buggy items"
        f"{f', {skipped} skipped (library not installed)' if skipped else ''}"
        f"{f', {len(items) - len(ran) - skipped} not applicable' if len(items) - len(ran) - skipped else ''}"
        f"; repetitions: {','.join(map(str, sorted(reps))) or '-'}"
    )
    rows = []
    if tool == "lint":
        rows.append(
            ("lint false-positive files", share(sum(bool(verdicts[i.name][0].findings) for i in correct), len(correct)))
        )
        rows.append(
            (
                "lint recall (BUG/WAITS line flagged)",
                share(sum(bool(verdicts[i.name][0].named) for i in buggy), len(buggy)),
            )
        )
    else:
        rows.append(
            ("correct items finishing", share(sum(every(i, lambda v: v.finished) for i in correct), len(correct)))
        )
        if tool != "torchrun":
            rows.append(
                (
                    "false diagnoses on correct items",
                    share(sum(not every(i, lambda v: not v.false_diagnosis) for i in correct), len(correct)),
                )
            )
        rows.append(("buggy items bounded", share(sum(every(i, lambda v: v.bounded) for i in buggy), len(buggy))))
        rows.append(
            (
                "buggy items failing (not finished)",
                share(sum(every(i, lambda v: not v.finished) for i in buggy), len(buggy)),
            )
        )
        if tool != "torchrun":
            rows.append(("blind headlines", share(sum(not every(i, lambda v: not v.blind) for i in buggy), len(buggy))))
        rows.append(
            (
                "bug or waiting line named as file:line",
                share(sum(every(i, lambda v: bool(v.named)) for i in buggy), len(buggy)),
            )
        )
    for label, value in rows:
        print(f"  {label:<40} {value}")
    flips = [i.name for i in ran if len({key(v) for v in verdicts[i.name]}) > 1]
    if flips:
        print(f"  verdict flipped between repetitions: {', '.join(flips)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--folder",
        action="append",
        type=Path,
        default=[],
        help="an item folder (repeatable; default: tests/realworld and tests/realworld/round2)",
    )
    parser.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS))
    parser.add_argument("--reps", type=int, default=2, help="runs of each item per tool other than lint (default 2)")
    parser.add_argument("--only", nargs="*", default=[], help="run only items whose name contains one of these")
    args = parser.parse_args()

    import barrierlab as bl

    folders = args.folder or [REALWORLD, REALWORLD / "round2"]
    items = [i for i in discover(folders) if not args.only or any(o in i.name for o in args.only)]
    tools = [t for t in args.tools if t != "torchrun" or harness.isolated()]
    if "torchrun" in args.tools and "torchrun" not in tools:
        print("torchrun: skipped (needs root, unshare and ip)")
    if "lab" in tools:
        bl.warm_up(wait=True)
    verdicts: dict[str, dict[str, list[Verdict]]] = {t: {} for t in tools}
    skipped = [i for i in items if corpus_of(i) is round2 and round2.missing(i)]
    started = time.monotonic()
    for item in items:
        if item in skipped:
            print(f"{item.name:<50}skipped: {', '.join(round2.missing(item))} not installed", flush=True)
        for tool in tools:
            if item in skipped and tool != "lint":  # lint only reads the source: it needs no library
                continue
            for _ in range(1 if tool == "lint" else args.reps):
                v = JUDGES[tool](item)
                verdicts[tool].setdefault(item.name, []).append(v)
                label = f"{item.name[:40]} {tool}"
                print(f"{label:<50}  {describe(item, tool, v)}", flush=True)
    print(
        f"\n{len(items)} items ({sum(i.kind == 'correct' for i in items)} correct, "
        f"{sum(i.kind == 'buggy' for i in items)} buggy) from {', '.join(str(f) for f in folders)}; "
        f"{time.monotonic() - started:.0f} s"
    )
    for tool in tools:
        table(tool, items, verdicts[tool], 0 if tool == "lint" else len(skipped))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
