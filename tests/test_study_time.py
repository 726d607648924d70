"""The study times have one source, scripts/study_time.py: the README's table, every notebook's header and
every instructor note say what it computes, and a disagreement is reported (then fixed by --write)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("study_time", ROOT / "scripts" / "study_time.py")
study_time = importlib.util.module_from_spec(_spec)
sys.modules["study_time"] = study_time  # its dataclass looks its module up
_spec.loader.exec_module(study_time)


def estimates() -> dict:
    return {p.name[:2]: study_time.estimate(p) for p in study_time.notebook_paths()}


def test_readme_headers_and_instructor_notes_agree_with_study_time():
    found = study_time.disagreements(estimates())
    assert not found, "run `python scripts/study_time.py --write`:\n  " + "\n  ".join(found)


def test_every_notebook_and_note_carries_a_marked_time():
    for path in study_time.notebook_paths():
        assert study_time._header_marks(nbformat.read(path, as_version=4)), f"{path.name}: no marked **Time:**"
        note = study_time._note(path)
        assert study_time.MARK.search(note.read_text()), f"instructor/{note.name}: no marked **Time:**"


@pytest.fixture
def copy_of_the_repository(tmp_path, monkeypatch):
    """The README, notebooks and instructor notes as they are, in a scratch directory the script works on."""
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    monkeypatch.setattr(study_time, "ROOT", tmp_path)
    return tmp_path


def test_a_header_that_disagrees_is_reported_and_write_fixes_it(copy_of_the_repository):
    path = sorted((copy_of_the_repository / "notebooks").glob("03_*.ipynb"))[0]
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if study_time.MARK.search(c.source))
    cell.source = study_time.MARK.sub("<!--st-->5 min<!--/st-->", cell.source)
    nbformat.write(nb, path)
    found = study_time.disagreements(estimates())
    assert len(found) == 1 and found[0].startswith("03_deadlocks.ipynb: the header's marked time is ['5 min']")
    assert path in study_time.write(estimates())
    assert study_time.disagreements(estimates()) == []


def test_a_readme_row_or_note_that_disagrees_is_reported(copy_of_the_repository):
    readme = copy_of_the_repository / "README.md"
    row = next(line for line in readme.read_text().splitlines() if "(notebooks/01_" in line)
    readme.write_text(readme.read_text().replace(row, row.rsplit("|", 2)[0] + "| 1 min |"))
    note = copy_of_the_repository / "notebooks" / "instructor" / "02_barriers_around_checkpointing.md"
    note.write_text(study_time.MARK.sub("<!--st-->2 min<!--/st-->", note.read_text()))
    found = study_time.disagreements(estimates())
    assert [f.split(":")[0] for f in found] == ["README.md", "instructor/02_barriers_around_checkpointing.md"]


def test_shown_source_counts_as_code_and_coding_prompts_take_longer():
    assert study_time.prompt_minutes("Copy `straggler.scenario` into a cell and move the barrier") == 8
    assert study_time.prompt_minutes("Run `extra_barrier.scenario` with `linger=True`: which barrier times out?") == 3
    nb = nbformat.v4.new_notebook()
    shown = nbformat.v4.new_code_cell("bl.show(f)")
    shown.outputs = [nbformat.v4.new_output("stream", name="stdout", text="def f():\n    return 1\n")]
    nb.cells = [shown]
    assert study_time._shown_source_lines(shown) == 2
