#!/usr/bin/env python3
"""Give notebooks slideshow metadata from their structure, so each presents as slides in JupyterLab.

    python scripts/slides.py notebooks/*.ipynb             set the metadata in place (only files that change)
    python scripts/slides.py --check notebooks/*.ipynb     exit 1 if a notebook's metadata is not up to date
    python scripts/slides.py --plan notebooks/05_*.ipynb   print the slides, one line each, and what is skipped

The slides are read by jupyterlab-slideshow (``deck:start`` in JupyterLab) and by any reveal.js-style tool
(``jupyter nbconvert --to slides``), through each cell's ``metadata.slideshow.slide_type``.  One idea per
slide:

- the title cell and every ``##`` heading start a **slide**; a ``###`` heading starts a **subslide**;
- text that follows a code cell (the next claim after a demonstration) starts a subslide, and so does a
  figure that would land on a slide already holding one, so a slide keeps to about one 1280x720 screen;
- a folded solution (``<details>``) is a subslide of its exercise, shown after the exercise and its check;
- **skipped**: the ``## Setup`` section, code between the title and the first ``##`` section, set-up code
  elsewhere (only imports and ``bl.warm_up()``), the navigation line at
  the end, and code whose stored text output is longer than ``--long`` lines (default 15) with no figure;
- every other cell continues the slide above it: it gets no ``slideshow`` metadata at all (jupyterlab-slideshow
  0.3 hides cells marked ``"-"``, the classic notation for "continue").

A cell tag overrides the rule for that cell: ``slides:slide``, ``slides:subslide``, ``slides:fragment``,
``slides:skip``, ``slides:notes`` or ``slides:continue``.  The script owns ``metadata.slideshow`` and
nothing else: running it again changes nothing (idempotent), and it never touches sources or outputs.
"""

from __future__ import annotations

import argparse
import ast
import base64
import re
import struct
import sys
from pathlib import Path

import nbformat

SLIDE, SUBSLIDE, FRAGMENT, SKIP, NOTES, CONTINUE = "slide", "subslide", "fragment", "skip", "notes", None
TAGS = {
    "slides:slide": SLIDE,
    "slides:subslide": SUBSLIDE,
    "slides:fragment": FRAGMENT,
    "slides:skip": SKIP,
    "slides:notes": NOTES,
    "slides:continue": CONTINUE,
}
#: Text outputs longer than this many lines (with no figure) are skipped on slides.
LONG_OUTPUT_LINES = 15
#: Width (CSS pixels) a figure is shown at on a 1280-pixel-wide slide, and the height above which a figure
#: leaves too little of a 720-pixel screen for its heading and code (reported by --plan).
SLIDE_WIDTH, TALL_FIGURE = 1100, 520


def first_line(cell) -> str:
    return cell.source.lstrip().split("\n", 1)[0]


def heading_level(cell) -> int:
    """1 for ``# ...``, 2 for ``## ...``, ...; 0 if the markdown cell does not start with a heading."""
    if cell.cell_type != "markdown":
        return 0
    match = re.match(r"^(#{1,6})\s", first_line(cell))
    return len(match.group(1)) if match else 0


def text_lines(cell) -> int:
    """Lines of text the cell's stored outputs print: streams, tracebacks and plain-text-only results."""
    lines = 0
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            lines += len(output.text.splitlines())
        elif output.output_type == "error":
            lines += sum(len(line.splitlines()) for line in output.traceback)
        elif "data" in output and set(output.data) <= {"text/plain"}:  # rich displays (bl.show's code) count as content
            lines += len(output.data.get("text/plain", "").splitlines())
    return lines


def has_figure_output(output) -> bool:
    return "data" in output and any(k.startswith("image/") for k in output.data)


def has_figure(cell) -> bool:
    return any(has_figure_output(o) for o in cell.get("outputs", []))


def figure_heights(cell) -> list[int]:
    """Displayed heights (CSS pixels, at most SLIDE_WIDTH wide) of the cell's stored PNG figures."""
    heights = []
    for output in cell.get("outputs", []):
        data = output.get("data", {}) if "data" in output else {}
        if "image/png" not in data:
            continue
        head = base64.b64decode(data["image/png"][:64])
        if head[:8] != b"\x89PNG\r\n\x1a\n":
            continue
        width, height = struct.unpack(">II", head[16:24])
        scale = min(1.0, SLIDE_WIDTH / width) if width else 1.0
        heights.append(round(height * scale))
    return heights


def is_setup(cell) -> bool:
    """Code that only imports modules or warms the launcher up: needed, but nothing to look at."""
    if cell.cell_type != "code" or not cell.source.strip():
        return False
    try:
        statements = ast.parse(cell.source).body
    except SyntaxError:  # IPython magics and the like: not set-up we can recognise
        return False
    return all(
        isinstance(s, (ast.Import, ast.ImportFrom))
        or (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and isinstance(s.value.func, ast.Attribute)
            and s.value.func.attr == "warm_up"
        )
        for s in statements
    )


def is_navigation(cell) -> bool:
    """A markdown cell that is only the previous | contents | next line."""
    text = cell.source.strip()
    return (
        cell.cell_type == "markdown"
        and bool(text)
        and "\n" not in text
        and text.startswith("[")
        and "](" in text
        and ("→" in text or "←" in text)
    )


def plan(nb, long_lines: int = LONG_OUTPUT_LINES) -> list[str | None]:
    """The slide type of each cell (None: continue the slide above), from the notebook's structure."""
    types: list[str | None] = []
    in_setup = False
    before_sections = True  # code between the title and the first section is the notebook's set-up
    previous = None  # the last cell shown (not skipped)
    figure_on_screen = False
    for index, cell in enumerate(nb.cells):
        level = heading_level(cell)
        if level and level <= 2:
            in_setup = first_line(cell).lstrip("#").strip().lower() in ("setup", "set-up", "set up")
        if level and level <= 2:
            before_sections = False
        if index == 0 or (level and level <= 2):
            kind = SKIP if in_setup else SLIDE
        elif in_setup or is_setup(cell) or is_navigation(cell) or (before_sections and cell.cell_type == "code"):
            kind = SKIP
        elif cell.cell_type == "code" and text_lines(cell) > long_lines and not has_figure(cell):
            kind = SKIP
        elif level >= 3:
            kind = SUBSLIDE
        elif cell.cell_type == "markdown" and cell.source.lstrip().startswith("<details"):
            kind = SUBSLIDE
        elif cell.cell_type == "markdown" and previous is not None and previous.cell_type == "code":
            kind = SUBSLIDE
        elif cell.cell_type == "code" and has_figure(cell) and figure_on_screen:
            kind = SUBSLIDE
        else:
            kind = CONTINUE
        for tag in cell.metadata.get("tags", []):
            if tag in TAGS:
                kind = TAGS[tag]
        types.append(kind)
        if kind not in (SKIP, NOTES):
            if kind in (SLIDE, SUBSLIDE):
                figure_on_screen = False
            figure_on_screen = figure_on_screen or has_figure(cell)
            previous = cell
    return types


def apply(nb, types: list[str | None]) -> bool:
    """Write the slide types into the cells' metadata; True if anything changed."""
    changed = False
    for cell, kind in zip(nb.cells, types):
        before = cell.metadata.get("slideshow")
        if kind is None:
            if "slideshow" in cell.metadata:
                del cell.metadata["slideshow"]
                changed = True
        elif before != {"slide_type": kind}:
            cell.metadata["slideshow"] = {"slide_type": kind}
            changed = True
    return changed


def describe(nb, types: list[str | None]) -> str:
    """One line per slide/subslide: its first line, how many cells it shows, and figures too tall to fit."""
    rows, current = [], None
    for index, (cell, kind) in enumerate(zip(nb.cells, types)):
        if kind in (SLIDE, SUBSLIDE):
            current = {
                "kind": kind,
                "first": index,
                "title": first_line(cell)[:60] or f"({cell.cell_type})",
                "cells": 0,
                "tall": [],
            }
            rows.append(current)
        if kind in (SKIP, NOTES):
            rows.append({"kind": kind, "first": index, "title": first_line(cell)[:60], "cells": 1, "tall": []})
            continue
        if current is not None:
            current["cells"] += 1
            current["tall"] += [h for h in figure_heights(cell) if h > TALL_FIGURE]
    lines = []
    for row in rows:
        mark = {SLIDE: "slide   ", SUBSLIDE: "  sub   ", SKIP: "  (skip)", NOTES: "  (notes)"}[row["kind"]]
        tall = f"  ! figure {', '.join(map(str, row['tall']))} px tall" if row["tall"] else ""
        size = f" [{row['cells']} cells]" if row["kind"] in (SLIDE, SUBSLIDE) else ""
        lines.append(f"{mark} {row['first']:>3}  {row['title']}{size}{tall}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook would change")
    parser.add_argument("--plan", action="store_true", help="print the slides of each notebook")
    parser.add_argument(
        "--long",
        type=int,
        default=LONG_OUTPUT_LINES,
        help=f"skip code cells printing more than this many lines (default {LONG_OUTPUT_LINES})",
    )
    options = parser.parse_args(argv)
    if options.long < 1:
        parser.error("--long must be >= 1")
    stale = []
    for path in options.notebooks:
        if not path.is_file():
            parser.error(f"no such notebook: {path}")
        nb = nbformat.read(path, as_version=4)
        types = plan(nb, options.long)
        if options.plan:
            print(
                f"{path}: {sum(t == SLIDE for t in types)} slides, {sum(t == SUBSLIDE for t in types)} subslides, "
                f"{sum(t == SKIP for t in types)} cells skipped"
            )
            print(describe(nb, types))
        if apply(nb, types):
            stale.append(path)
            if not options.check:
                nbformat.write(nb, path)
    verb = "would change" if options.check else "updated"
    for path in stale:
        print(f"slides: {verb} {path}")
    if not stale:
        print(f"slides: {len(options.notebooks)} notebook(s) already up to date")
    return 1 if options.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
