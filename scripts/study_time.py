"""Estimate how long a learner studying alone needs for each notebook, and say how the figure was reached.

    python scripts/study_time.py                       # every notebook, a Markdown table for the README
    python scripts/study_time.py --run-seconds 05=24   # use a measured run time (benchmarks/notebooks.py)

The estimate adds five parts, each counted from the notebook itself:

* reading the text: markdown words (collapsed ``<details>`` blocks included, at half weight, since a
  learner opens some of them) at 130 words a minute, a typical pace for technical prose that is read to be
  understood rather than skimmed;
* reading the code: 4 s per non-blank line of code cells the learner sees;
* reading what the cells print: 1,500 characters of stored text output a minute, plus 30 s per figure
  (timelines are meant to be looked at);
* running the cells: the notebook's measured run time (``--run-seconds``; default: 1 s per cell that
  starts ranks, the typical figure on the 2-core reference machine);
* predicting and practising: 2 min per predict cell, 12 min per exercise (attempt, check, one retry, read
  the solution), 3 min per "On your own" prompt.

The total is rounded up to the next 5 minutes. It is an estimate for self-study; a class led by an
instructor takes the times in ``notebooks/instructor/course_plan.md``.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
WORDS_PER_MINUTE = 130
CODE_SECONDS_PER_LINE = 4
OUTPUT_CHARS_PER_MINUTE = 1500
FIGURE_SECONDS = 30
PREDICT_MINUTES = 2
EXERCISE_MINUTES = 12
ON_YOUR_OWN_MINUTES = 3
RUN_SECONDS_PER_RANK_CELL = 1.0

_DETAILS = re.compile(r"<details>.*?</details>", re.S)
_WORD = re.compile(r"[A-Za-z0-9_']+")


@dataclass
class Estimate:
    name: str
    reading: float
    code: float
    output: float
    running: float
    practice: float

    @property
    def total(self) -> int:
        minutes = self.reading + self.code + self.output + self.running + self.practice
        return int(math.ceil(minutes / 5.0) * 5)


def _words(text: str) -> float:
    folded = " ".join(_DETAILS.findall(text))
    return len(_WORD.findall(_DETAILS.sub(" ", text))) + 0.5 * len(_WORD.findall(folded))


def _output_chars_and_figures(cell) -> tuple[int, int]:
    chars = figures = 0
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            chars += len(output.get("text", ""))
            continue
        data = output.get("data", {})
        if "image/png" in data or "image/svg+xml" in data:
            figures += 1
        elif "text/plain" in data:
            chars += len(data["text/plain"])
    return chars, figures


def estimate(path: Path, run_seconds: float | None = None) -> Estimate:
    nb = nbformat.read(path, as_version=4)
    words = code_lines = chars = figures = rank_cells = 0.0
    predicts = exercises = own = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            words += _words(cell.source)
            predicts += cell.source.count("**Predict")
            exercises += len(re.findall(r"^##+ .*Exercise", cell.source, flags=re.M | re.I))
            if re.search(r"^## On your own", cell.source, flags=re.M):
                own += len(re.findall(r"^\s*(?:[-*]|\d+\.) ", cell.source.split("## On your own", 1)[1], flags=re.M))
        elif cell.cell_type == "code":
            code_lines += sum(1 for line in cell.source.splitlines() if line.strip())
            c, f = _output_chars_and_figures(cell)
            chars, figures = chars + c, figures + f
            rank_cells += "bl.run(" in cell.source or ".run(" in cell.source
    running = (run_seconds if run_seconds is not None else rank_cells * RUN_SECONDS_PER_RANK_CELL) / 60.0
    return Estimate(
        name=path.stem,
        reading=words / WORDS_PER_MINUTE,
        code=code_lines * CODE_SECONDS_PER_LINE / 60.0,
        output=chars / OUTPUT_CHARS_PER_MINUTE + figures * FIGURE_SECONDS / 60.0,
        running=running,
        practice=predicts * PREDICT_MINUTES + exercises * EXERCISE_MINUTES + own * ON_YOUR_OWN_MINUTES,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument(
        "--run-seconds",
        action="append",
        default=[],
        metavar="NN=SECONDS",
        help="measured run time of notebook NN (from benchmarks/notebooks.py)",
    )
    args = parser.parse_args(argv)
    measured = {}
    for item in args.run_seconds:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--run-seconds takes NN=SECONDS, got {item!r}")
        measured[key] = float(value)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    print("| notebook | reading | code | output | running | predict + exercises | total |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for path in paths:
        e = estimate(path, measured.get(path.name[:2]))
        print(
            f"| {e.name} | {e.reading:.0f} | {e.code:.0f} | {e.output:.0f} | {e.running:.1f} | "
            f"{e.practice:.0f} | **{e.total} min** |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
