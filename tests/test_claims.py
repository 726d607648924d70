"""The claim ledger (notebooks/claims.md) stays true to the repository: every claim names a cell that exists
(a notebook and a section heading followed by a code cell) or a source that exists (a file of the installed
torch, a public URL of an allowed kind, or a pytorch/pytorch pull request or issue number)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "notebooks" / "claims.md"
TORCH_ROOT = Path(torch.__file__).resolve().parent.parent

#: Where a cited source may live: documentation and code hosts a reader can open.
ALLOWED_URLS = re.compile(
    r"^https://(pytorch\.org/|docs\.pytorch\.org/|github\.com/(pytorch|python|facebookincubator|NVIDIA|huggingface|Lightning-AI|"
    r"microsoft|open-mmlab|facebookresearch)/|docs\.nvidia\.com/|man7\.org/|docs\.python\.org/)"
)
_ROW = re.compile(r"^\|\s*(?P<id>[A-Z]\d+[a-z0-9-]*)\s*\|(?P<claim>[^|]+)\|(?P<where>[^|]+)\|(?P<backing>[^|]+)\|\s*$")
_CELL = re.compile(r"cell:\s*(?P<nb>\d\d)\s*§\s*(?P<heading>[^`;+]+?)\s*(?:\(|`|;|\+|$)")
_SOURCE_PATH = re.compile(r"`(?P<path>torch/[A-Za-z0-9_./]+\.(?:py|pyi))`")
_URL = re.compile(r"<(?P<url>https?://[^>]+)>")
_PR = re.compile(r"pytorch/pytorch#(?P<n>\d+)")


def _rows() -> list[dict]:
    if not LEDGER.exists():
        return []
    return [m.groupdict() for line in LEDGER.read_text().splitlines() if (m := _ROW.match(line))]


ROWS = _rows()


def _notebook(number: str) -> Path:
    found = sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    assert found, f"no notebook {number}"
    return found[0]


def _plain(text: str) -> str:
    """Heading text without numbering marks, code marks, punctuation and bracketed remarks."""
    text = re.sub(r"\[[^\]]*\]", " ", text.replace("`", ""))
    return " ".join(re.sub(r"[^a-z0-9=_()]+", " ", text.lower()).split())


def _section_has_code(path: Path, heading: str) -> bool:
    """The section whose heading contains ``heading`` (ignoring code and emphasis marks) exists and holds
    at least one code cell."""
    heading = _plain(heading)
    cells = nbformat.read(path, as_version=4).cells
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        lines = [line for line in cell.source.splitlines() if line.startswith("#")]
        if any(heading in _plain(line) for line in lines):
            for later in cells[i + 1 :]:
                if later.cell_type == "code":
                    return True
                if later.cell_type == "markdown" and re.match(r"^##? ", later.source):
                    return False
    return False


def test_the_ledger_exists_and_is_not_empty() -> None:
    assert LEDGER.exists(), "notebooks/claims.md is missing"
    assert len(ROWS) >= 40, (
        f"only {len(ROWS)} claims parsed from notebooks/claims.md (rows: | ID | claim | where | backing |)"
    )


def test_claim_ids_are_unique() -> None:
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_every_claim_is_backed_by_an_existing_cell_or_source(row: dict) -> None:
    backing = row["backing"].strip()
    checked = 0
    for part in re.split(r";\s*", backing):
        for m in _CELL.finditer(part):
            path = _notebook(m["nb"])
            assert _section_has_code(path, m["heading"]), (
                f"{row['id']}: {path.name} has no section '{m['heading'].strip()}' with a code cell"
            )
            checked += 1
        for m in _SOURCE_PATH.finditer(part):
            assert (TORCH_ROOT / m["path"]).exists(), f"{row['id']}: {m['path']} is not in the installed torch"
            checked += 1
        for m in _URL.finditer(part):
            assert ALLOWED_URLS.match(m["url"]), f"{row['id']}: {m['url']} is not a source a reader can check"
            checked += 1
        checked += len(_PR.findall(part))
    assert checked, f"{row['id']}: no cell, torch file, URL or pytorch/pytorch#N in {backing!r}"
