"""Every reference in the course material points at something that exists: relative links, "notebook NN",
scenario modules and repository files named in the README, docs/, the notebooks, the instructor notes and the wrap-up."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from barrierlab import scenarios

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
_NOTEBOOK_NUMBER = re.compile(r"\b[Nn]otebooks? (?P<n>\d\d)\b")
_PAREN_NUMBER = re.compile(r"\((?P<n>0\d)(?:, (?P<m>0\d))*\)")
_SCENARIO = re.compile(r"barrierlab\.scenarios\.(?P<name>[a-z_0-9]+)")
_REPO_PATH = re.compile(r"`(?P<path>(?:src|tests|benchmarks|scripts|notebooks)/[A-Za-z0-9_./-]+)`")


def _documents() -> list[tuple[Path, str]]:
    docs = [(ROOT / "README.md", (ROOT / "README.md").read_text())]
    docs += [(p, p.read_text()) for p in sorted((ROOT / "docs").glob("*.md"))]
    docs += [(p, p.read_text()) for p in sorted(NOTEBOOKS.glob("*.md"))]
    docs += [(p, p.read_text()) for p in sorted((NOTEBOOKS / "instructor").glob("*.md"))]
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        docs.append((path, "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")))
    return docs


DOCUMENTS = _documents()
NUMBERS = {p.name[:2] for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}


@pytest.mark.parametrize("path,text", DOCUMENTS, ids=[str(p.relative_to(ROOT)) for p, _ in DOCUMENTS])
def test_relative_links_point_at_existing_files(path: Path, text: str) -> None:
    missing = []
    for m in _LINK.finditer(text):
        target = m["target"].split("#", 1)[0]
        if not target or re.match(r"^[a-z]+:", target):
            continue
        if not (path.parent / target).exists():
            missing.append(m["target"])
    assert not missing, f"{path.relative_to(ROOT)} links to files that do not exist: {missing}"


@pytest.mark.parametrize("path,text", DOCUMENTS, ids=[str(p.relative_to(ROOT)) for p, _ in DOCUMENTS])
def test_notebook_numbers_name_existing_notebooks(path: Path, text: str) -> None:
    named = {m["n"] for m in _NOTEBOOK_NUMBER.finditer(text)}
    assert named <= NUMBERS, f"{path.relative_to(ROOT)} names notebooks {sorted(named - NUMBERS)}, which do not exist"


@pytest.mark.parametrize("path,text", DOCUMENTS, ids=[str(p.relative_to(ROOT)) for p, _ in DOCUMENTS])
def test_scenarios_and_repository_paths_exist(path: Path, text: str) -> None:
    known = set(scenarios.available())
    unknown = {m["name"] for m in _SCENARIO.finditer(text)} - known - {"name", "x"}
    assert not unknown, f"{path.relative_to(ROOT)} names scenarios that do not exist: {sorted(unknown)}"
    paths = {m["path"].rstrip(".") for m in _REPO_PATH.finditer(text)}
    missing = sorted(p for p in paths if "*" not in p and "<" not in p and not (ROOT / p).exists())
    assert not missing, f"{path.relative_to(ROOT)} names repository paths that do not exist: {missing}"
