"""Write a notebook from a percent-format script (``# %%`` code cells, ``# %% [markdown]`` text cells).

    python scripts/py2nb.py draft.py notebooks/03_deadlocks.ipynb

An authoring aid: the .ipynb it writes is the source of truth afterwards; run
``scripts/run_notebooks.py`` on it to store outputs. Tags go on the cell line: ``# %% tags=["raises-exception"]``.
"""

from __future__ import annotations

import json
import re
import sys

import nbformat

_MARK = re.compile(r"^# %%(?P<md> \[markdown\])?(?: tags=(?P<tags>\[.*\]))?\s*$")


def convert(text: str) -> nbformat.NotebookNode:
    cells, kind, tags, lines = [], None, [], []

    def flush() -> None:
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(re.sub(r"^# ?", "", line) for line in body.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(body))
        elif kind == "code" and body:
            cell = nbformat.v4.new_code_cell(body)
            if tags:
                cell.metadata["tags"] = tags
            cells.append(cell)

    for line in text.splitlines():
        match = _MARK.match(line)
        if match:
            flush()
            kind = "markdown" if match["md"] else "code"
            tags = json.loads(match["tags"]) if match["tags"] else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
        "language_info": {"name": "python"},
    }
    return nb


if __name__ == "__main__":
    source, target = sys.argv[1:3]
    nbformat.write(convert(open(source).read()), target)
