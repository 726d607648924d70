"""Estimate how long a learner studying alone needs for each notebook, and say how the figure was reached.

    python scripts/study_time.py                       # every notebook, a Markdown table for the README
    python scripts/study_time.py --run-seconds 05=24   # use a measured run time (benchmarks/notebooks.py)
    python scripts/study_time.py --write               # put the times into the README, headers and notes
    python scripts/study_time.py --check               # exit 1 if any of them disagrees with this script

This script is the one source of the study times. ``--write`` puts each total between markers: in the
README's table (``<!-- study-times:start -->`` … ``<!-- study-times:end -->``, the last column of each
notebook's row), in each notebook's ``**Time:**`` line and in each instructor note's ``**Time:**`` line
(``<!--st-->`` … ``<!--/st-->``); ``tests/test_study_time.py`` fails when they disagree.

The estimate adds five parts, each counted from the notebook itself:

* reading the text: markdown words (collapsed ``<details>`` blocks included, at half weight, since a
  learner opens some of them) at 130 words a minute, a typical pace for technical prose that is read to be
  understood rather than skimmed;
* reading the code: 4 s per non-blank line of code cells the learner sees, and of the source that
  ``bl.show(...)`` prints (that is the code of the section, not output to skim);
* reading what the cells print: 1,500 characters of other stored text output a minute, plus 30 s per
  figure (timelines are meant to be looked at);
* running the cells: the notebook's measured run time (``--run-seconds``; default: 1 s per cell that
  starts ranks, the typical figure on the 2-core reference machine);
* predicting and practising: 2 min per predict cell; 12 min per exercise task (attempt, check, one retry,
  read the solution), where an exercise has as many tasks as check calls; per "On your own" prompt 3 min
  to run something and look, 8 min when it asks you to change or write code (copy, change, make, ...).

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
ON_YOUR_OWN_CODING_MINUTES = 8
RUN_SECONDS_PER_RANK_CELL = 1.0

_DETAILS = re.compile(r"<details>.*?</details>", re.S)
_WORD = re.compile(r"[A-Za-z0-9_']+")
_CHECK_CALL = re.compile(r"(?:^|[\s(.])check\w*\(", re.M)
_CODING_PROMPT = re.compile(r"\b(copy|change|modify|make|give|write|move|replace|add|call|rewrite|edit|turn)\b", re.I)
_BULLET = re.compile(r"^\s*(?:[-*]|\d+\.) (.*)$", re.M)
#: Where --write puts the times, and what --check compares.
README_START, README_END = "<!-- study-times:start -->", "<!-- study-times:end -->"
MARK = re.compile(r"<!--st-->(?P<text>.*?)<!--/st-->")


@dataclass
class Estimate:
    name: str
    reading: float
    code: float
    output: float
    running: float
    predict: float = 0.0
    exercise: float = 0.0
    own: float = 0.0

    @property
    def practice(self) -> float:
        return self.predict + self.exercise + self.own

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


def _shown_source_lines(cell) -> int:
    """Non-blank lines of the source that a ``bl.show(...)`` cell printed (its plain-text form)."""
    lines = 0
    for output in cell.get("outputs", []):
        text = (
            output.get("text", "")
            if output.get("output_type") == "stream"
            else output.get("data", {}).get("text/plain", "")
        )
        lines += sum(1 for line in text.splitlines() if line.strip())
    return lines


def on_your_own_prompts(source: str) -> list[str]:
    """The bullets of a cell's "On your own" section, up to the next heading."""
    if not re.search(r"^## On your own", source, flags=re.M):
        return []
    section = re.split(r"^#+ ", source.split("## On your own", 1)[1], maxsplit=1, flags=re.M)[0]
    return _BULLET.findall(section)


def prompt_minutes(prompt: str) -> int:
    return ON_YOUR_OWN_CODING_MINUTES if _CODING_PROMPT.search(prompt) else ON_YOUR_OWN_MINUTES


def estimate(path: Path, run_seconds: float | None = None) -> Estimate:
    nb = nbformat.read(path, as_version=4)
    words = code_lines = chars = figures = rank_cells = 0.0
    predicts = exercises = checks = 0
    own = 0.0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            words += _words(cell.source)
            predicts += cell.source.count("**Predict")
            exercises += len(re.findall(r"^##+ .*Exercise", cell.source, flags=re.M | re.I))
            own += sum(prompt_minutes(p) for p in on_your_own_prompts(cell.source))
        elif cell.cell_type == "code":
            code_lines += sum(1 for line in cell.source.splitlines() if line.strip())
            if "bl.show(" in cell.source:
                code_lines += _shown_source_lines(cell)
            else:
                c, f = _output_chars_and_figures(cell)
                chars, figures = chars + c, figures + f
            rank_cells += "bl.run(" in cell.source or ".run(" in cell.source
            checks += bool(_CHECK_CALL.search(cell.source))
    running = (run_seconds if run_seconds is not None else rank_cells * RUN_SECONDS_PER_RANK_CELL) / 60.0
    tasks = max(exercises, checks) if exercises else 0
    return Estimate(
        name=path.stem,
        reading=words / WORDS_PER_MINUTE,
        code=code_lines * CODE_SECONDS_PER_LINE / 60.0,
        output=chars / OUTPUT_CHARS_PER_MINUTE + figures * FIGURE_SECONDS / 60.0,
        running=running,
        predict=predicts * PREDICT_MINUTES,
        exercise=tasks * EXERCISE_MINUTES,
        own=own,
    )


def time_text(e: Estimate) -> str:
    """What the notebook header and the instructor note say, e.g. '45 min self-study (study_time.py:
    reading 30, predict 2, exercise 12)'."""
    parts = [f"reading {e.total - round(e.practice)}"]
    for name, minutes in (("predict", e.predict), ("exercise", e.exercise), ("prompts", e.own)):
        if minutes:
            parts.append(f"{name} {minutes:.0f}")
    return f"{e.total} min self-study (study_time.py: {', '.join(parts)})"


def notebook_paths() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _note(path: Path) -> Path:
    return ROOT / "notebooks" / "instructor" / f"{path.stem}.md"


def _readme_rows(text: str) -> dict[str, str]:
    """Each notebook's time in the README's marked table: {'00': '45 min', ...}."""
    if README_START not in text or README_END not in text:
        return {}
    table = text.split(README_START, 1)[1].split(README_END, 1)[0]
    rows = re.finditer(r"^\|.*\(notebooks/(?P<nn>\d\d)_[^)]*\.ipynb\).*\|\s*(?P<time>[^|]*?)\s*\|\s*$", table, re.M)
    return {m["nn"]: m["time"] for m in rows}


#: The course's whole time in the README's first paragraph: "(about 9¾ hours alone)".
README_TOTAL = re.compile(r"\(about (?P<hours>[0-9]*[½¼¾]?|[0-9]+) hours alone\)")


def hours_text(minutes: int) -> str:
    """Minutes as hours to the nearest quarter: 585 -> '9¾'."""
    quarters = round(minutes / 15)
    whole, part = divmod(quarters, 4)
    return f"{whole if whole or not part else ''}{['', '¼', '½', '¾'][part]}"


def disagreements(estimates: dict[str, Estimate]) -> list[str]:
    """Every place (README, notebook header, instructor note) whose study time is not this script's."""
    found = []
    readme_text = (ROOT / "README.md").read_text()
    readme = _readme_rows(readme_text)
    total = hours_text(sum(e.total for e in estimates.values()))
    said = [m["hours"] for m in README_TOTAL.finditer(readme_text)]
    if len(estimates) == len(notebook_paths()) and said != [total]:
        found.append(f"README.md: the course's time says {said!r} hours, study_time.py {total!r}")
    for nn, e in estimates.items():
        if readme.get(nn) != f"{e.total} min":
            found.append(f"README.md: notebook {nn} says {readme.get(nn)!r}, study_time.py {e.total} min")
        path = next(p for p in notebook_paths() if p.name.startswith(nn))
        header = _header_marks(nbformat.read(path, as_version=4))
        if header != [time_text(e)]:
            found.append(f"{path.name}: the header's marked time is {header!r}, study_time.py {time_text(e)!r}")
        note = _note(path)
        if note.exists():
            marked = MARK.findall(note.read_text())
            if marked != [time_text(e)]:
                found.append(f"instructor/{note.name}: the marked time is {marked!r}, study_time.py {time_text(e)!r}")
    return found


def _header_marks(nb) -> list[str]:
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    return [m["text"] for c in nb.cells[:first_code] if c.cell_type == "markdown" for m in MARK.finditer(c.source)]


def _marked(text: str, e: Estimate) -> str:
    """``text`` with its marked time replaced; an unmarked ``**Time:**`` line gets the marks at its start."""
    new = f"<!--st-->{time_text(e)}<!--/st-->"
    if MARK.search(text):
        return MARK.sub(lambda _m: new, text, count=1)
    return re.sub(r"^\*\*Tim(?:e|ing):?\*\*:?[ ]*", lambda m: f"**Time:** {new}. In class: ", text, count=1, flags=re.M)


def write(estimates: dict[str, Estimate]) -> list[Path]:
    """Put every total where the learner and the instructor read it; return the files changed."""
    changed = []
    readme_path = ROOT / "README.md"
    readme = readme_path.read_text()
    if README_START in readme:
        head, rest = readme.split(README_START, 1)
        table, tail = rest.split(README_END, 1)
        for nn, e in estimates.items():
            table = re.sub(
                rf"^(\|.*\(notebooks/{nn}_[^)]*\.ipynb\).*\|\s*)[^|]*?(\s*\|\s*)$",
                lambda m, e=e: f"{m[1]}{e.total} min{m[2]}",
                table,
                flags=re.M,
            )
        new = head + README_START + table + README_END + tail
        if len(estimates) == len(notebook_paths()):
            total = hours_text(sum(e.total for e in estimates.values()))
            new = README_TOTAL.sub(f"(about {total} hours alone)", new, count=1)
        if new != readme:
            readme_path.write_text(new)
            changed.append(readme_path)
    for nn, e in estimates.items():
        path = next(p for p in notebook_paths() if p.name.startswith(nn))
        nb = nbformat.read(path, as_version=4)
        first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
        for cell in nb.cells[:first_code]:
            if cell.cell_type == "markdown" and (MARK.search(cell.source) or "**Time" in cell.source):
                new_source = _marked(cell.source, e) if MARK.search(cell.source) else _header(cell.source, e)
                if new_source != cell.source:
                    cell.source = new_source
                    nbformat.write(nb, path)
                    changed.append(path)
                break
        note = _note(path)
        if note.exists():
            text = note.read_text()
            new_text = _marked(text, e)
            if new_text != text:
                note.write_text(new_text)
                changed.append(note)
    return changed


def _header(source: str, e: Estimate) -> str:
    """A notebook header's unmarked ``**Time:**`` line becomes the marked time (the whole line)."""
    new = f"**Time:** <!--st-->{time_text(e)}<!--/st-->"
    return re.sub(r"^\*\*Time:?\*\*.*$", lambda _m: new, source, count=1, flags=re.M)


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
    parser.add_argument("--write", action="store_true", help="put the times into the README, headers and notes")
    parser.add_argument("--check", action="store_true", help="exit 1 if the README, a header or a note disagrees")
    args = parser.parse_args(argv)
    measured = {}
    for item in args.run_seconds:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--run-seconds takes NN=SECONDS, got {item!r}")
        measured[key] = float(value)
    paths = args.notebooks or notebook_paths()
    if args.write or args.check:
        estimates = {p.name[:2]: estimate(p, measured.get(p.name[:2])) for p in paths}
        if args.write:
            for path in write(estimates):
                print("wrote", path.relative_to(ROOT))
        found = disagreements(estimates)
        print("\n".join(found) or "README, notebook headers and instructor notes agree with study_time.py")
        return 1 if found else 0
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
