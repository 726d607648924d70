"""The README is for learners and its Binder badge works once published: it is derived from the repository
named in pyproject.toml (scripts/binder_badge.py), and no placeholder is left in the README, docs/ or the course
plan."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "binder_badge.py"
PLACEHOLDER = re.compile(r"\b(OWNER|YOUR[_-]?(USER|NAME|ORG)|USERNAME)\b|<(owner|user|org)>|example/barrierlab", re.I)
LEARNER_PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "notebooks/instructor/course_plan.md",
]


def badge_tool(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--root", str(root)], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("path", LEARNER_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_placeholder_is_left(path):
    found = [m[0] for m in PLACEHOLDER.finditer(path.read_text())]
    assert not found, f"{path.relative_to(ROOT)} still has placeholders: {found}"


def test_the_readme_badge_is_the_one_derived_from_the_repository():
    done = badge_tool("--check")
    assert done.returncode == 0, done.stderr


def test_the_badge_follows_the_git_remote_of_a_clone(tmp_path):
    """A clone published elsewhere: --from-git-remote names that repository in pyproject.toml and the badge."""
    for name in ("README.md", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", "git@github.com:a-school/dist-course.git"])
    assert badge_tool("--check", root=tmp_path).returncode == 0
    done = badge_tool("--from-git-remote", root=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "mybinder.org/v2/gh/a-school/dist-course/HEAD?urlpath=lab/tree/notebooks/00_"
        in (tmp_path / "README.md").read_text()
    )
    assert 'Repository = "https://github.com/a-school/dist-course"' in (tmp_path / "pyproject.toml").read_text()
    assert badge_tool("--check", root=tmp_path).returncode == 0
    (tmp_path / "pyproject.toml").write_text(
        (tmp_path / "pyproject.toml").read_text().replace("a-school/dist-course", "someone/else")
    )
    assert badge_tool("--check", root=tmp_path).returncode == 1


def test_a_remote_off_github_is_refused(tmp_path):
    for name in ("README.md", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", "https://gitlab.com/a/b.git"])
    done = badge_tool("--from-git-remote", root=tmp_path)
    assert done.returncode != 0 and "not a GitHub repository" in done.stderr


def test_the_first_screen_is_for_learners():
    """The two commands and the notebook index come before anything else; developer material lives in docs/."""
    text = (ROOT / "README.md").read_text()
    first_screen = text[: text.index("## Notebooks")]
    assert "make lab" in first_screen and "make test" in first_screen
    assert "mybinder.org" in first_screen
    for moved in ("## Performance", "## Tests in a browser", "#SBATCH", "### What is where"):
        assert moved not in text, f"{moved!r} belongs in docs/, linked from the README"


def test_the_study_times_sit_between_their_markers():
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- study-times:start -->", 1)[1].split("<!-- study-times:end -->", 1)[0]
    rows = [line for line in block.splitlines() if line.startswith("| [")]
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert [re.search(r"\(notebooks/([^)]+\.ipynb)\)", r)[1] for r in rows if ".ipynb" in r] == notebooks
    assert all(re.search(r"\| \d+ min \|$", r) for r in rows), rows
