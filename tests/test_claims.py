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
_TEST = re.compile(r"`(?P<file>tests/test_\w+\.py)::(?P<name>test_\w+)`")


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
        for m in _TEST.finditer(part):  # a test of this repository that runs the claim (and fails if it is false)
            test_file = ROOT / m["file"]
            assert test_file.exists() and f"def {m['name']}(" in test_file.read_text(), (
                f"{row['id']}: no test {m['name']} in {m['file']}"
            )
            checked += 1
    assert checked, f"{row['id']}: no cell, torch file, URL or pytorch/pytorch#N in {backing!r}"


# --- what the ledger and the instructor notes quote from stored outputs --------------------------------------

#: A quote of a stored output, in claims.md and in the instructor notes: (stored: `rank 2: read 250 rows`).
_STORED = re.compile(r"stored:\s*`(?P<text>[^`]+)`")
_NUMBER = re.compile(r"(?<![\w.#§])\d+(?:\.\d+)?(?![\w.])")
#: Notebooks whose claims are held to the number rule below (04-07 join when their claims are reworded).
NUMBER_CHECKED = {"00", "01", "02", "03"}
NOTES = sorted((ROOT / "notebooks" / "instructor").glob("[0-9][0-9]_*.md"))


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _stored_output(path: Path) -> str:
    """Every text a notebook's code cells printed, as stored (streams and text/plain of non-image outputs)."""
    texts = []
    for cell in nbformat.read(path, as_version=4).cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                texts.append(output.get("text", ""))
            elif not any(kind.startswith("image/") for kind in output.get("data", {})):
                texts.append(output.get("data", {}).get("text/plain", ""))
    return _squeeze("\n".join(texts))


def _quotes() -> list[tuple[str, str, str]]:
    """(where, notebook number, quoted text) for every stored-output quote of the ledger and the notes."""
    found = [(r["id"], r["id"][1:3], m["text"]) for r in ROWS for m in _STORED.finditer(r["claim"])]
    for note in NOTES:
        found += [(f"instructor/{note.name}", note.name[:2], m["text"]) for m in _STORED.finditer(note.read_text())]
    return found


QUOTES = _quotes()


def test_the_ledger_and_the_notes_quote_stored_outputs():
    assert len({where for where, _, _ in QUOTES}) >= 4, QUOTES


@pytest.mark.parametrize("where,number,text", QUOTES, ids=[f"{w}:{t[:30]}" for w, _, t in QUOTES])
def test_a_quoted_output_is_what_the_notebook_stored(where: str, number: str, text: str) -> None:
    assert _squeeze(text) in _stored_output(_notebook(number)), (
        f"{where} quotes `{text}`, which notebook {number}'s stored outputs do not contain: re-read the output"
    )


def _section_text(path: Path, heading: str) -> str:
    """The code and stored text outputs of the section whose heading contains ``heading``."""
    heading, cells, texts, inside = _plain(heading), nbformat.read(path, as_version=4).cells, [], False
    for cell in cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if re.match(r"^##? ", line):  # a section heading, wherever it is in the cell
                    inside = heading in _plain(line)
        if inside and cell.cell_type == "code":
            texts.append(cell.source)
            for output in cell.get("outputs", []):
                texts.append(output.get("text", "") or output.get("data", {}).get("text/plain", ""))
    return "\n".join(texts)


@pytest.mark.parametrize(
    "row", [r for r in ROWS if _CELL.search(r["backing"]) and r["id"][1:3] in NUMBER_CHECKED], ids=lambda r: r["id"]
)
def test_numbers_in_a_claim_backed_by_a_cell_are_in_that_cell(row: dict) -> None:
    """A claim that cites a cell for a run states no number the cited sections' code and output do not hold:
    a number that changes from run to run is quoted with `stored:` (checked above) or not at all."""
    claim = re.sub(r"\b[A-Z]\d\d-\d+", "", _STORED.sub("", row["claim"]))  # quotes and claim IDs aside
    cited = "\n".join(_section_text(_notebook(m["nb"]), m["heading"]) for m in _CELL.finditer(row["backing"]))
    held = set(_NUMBER.findall(cited))
    missing = [n for n in _NUMBER.findall(claim) if n not in held]
    assert not missing, f"{row['id']}: {missing} in the claim, not in the code or output of {row['backing'].strip()}"
