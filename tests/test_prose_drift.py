"""A fact the prose states about a run is asserted by the notebook's own code, so nbval fails when the run
drifts. Shown once on purpose: lesson 00's first section, cut after its facts cell, passes nbval as stored;
with one rank's work changed (so rank 2, not rank 1, arrives last, against what the text says), the facts cell
raises and nbval fails there, before any output is compared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "notebooks" / "00_what_is_a_barrier.ipynb"
RUN_CELL, FACTS_CELL = "02caace4", "ddcd81c4"  # §1: the staggered run, and the facts the prose states
TEXT_CELL = "1295e0ee"


def _first_section(tmp_path: Path, run_source: str | None = None) -> Path:
    """Lesson 00 up to its first facts cell, in ``notebooks/`` of a scratch copy (the lesson opens files
    relative to it); ``run_source`` replaces the source of the run's cell."""
    nb = nbformat.read(LESSON, as_version=4)
    ids = [cell.get("id") for cell in nb.cells]
    nb.cells = nb.cells[: ids.index(FACTS_CELL) + 1]
    if run_source is not None:
        nb.cells[ids.index(RUN_CELL)].source = run_source
    folder = tmp_path / "notebooks"
    folder.mkdir(parents=True)
    path = folder / LESSON.name
    nbformat.write(nb, path)
    return path


def _nbval(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--nbval",
            "--nbval-current-env",
            "--nbval-cell-timeout=120",
            "--nbval-sanitize-with",
            str(ROOT / "tests" / "nbval_sanitize.cfg"),
            str(path),
        ],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "BARRIERLAB_LIVE": "0"},
    )


def test_the_text_states_the_fact_the_cell_asserts():
    nb = nbformat.read(LESSON, as_version=4)
    cells = {cell.get("id"): cell for cell in nb.cells}
    assert "rank 1, with 0.5 s of work" in cells[TEXT_CELL].source
    assert "assert last == 1" in cells[FACTS_CELL].source


@pytest.mark.slow
def test_nbval_passes_the_stored_section_and_fails_when_its_fact_drifts(tmp_path):
    stored = _nbval(_first_section(tmp_path / "stored"))
    assert stored.returncode == 0, stored.stdout[-3000:]

    drifted_run = (
        "run = bl.run(staggered_arrival.scenario, 4, kwargs={'work_seconds': (0.2, 0.1, 0.5, 0.35)})\n"
        'run.timeline(since="function")'
    )
    drifted = _nbval(_first_section(tmp_path / "drifted", drifted_run))
    assert drifted.returncode != 0
    assert "AssertionError" in drifted.stdout and "assert last == 1" in drifted.stdout, drifted.stdout[-3000:]
    assert "1 failed" in drifted.stdout, drifted.stdout[-3000:]
