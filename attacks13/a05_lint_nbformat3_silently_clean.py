"""Promise 5 (clear errors for bad input) / lint's exit codes: 2 for "not Python or a notebook".

A notebook in nbformat 3 (its code in worksheets[].cells[].input, as Jupyter still opens and converts) whose only
cell has a barrier under `if dist.get_rank() == 0:` is reported "No rank-dependent collectives found" with
exit 0: lint reads `notebook.get("cells", [])` (src/barrierlab/lint.py, _lint_notebook) so a JSON object without
"cells" is linted as an empty notebook. The same code as a v4 notebook exits 1.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import TempDir, barrierlab  # noqa: E402

CODE = "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n"

with TempDir() as d:
    v3 = os.path.join(d, "old.ipynb")
    with open(v3, "w") as f:
        json.dump(
            {
                "nbformat": 3,
                "nbformat_minor": 0,
                "metadata": {},
                "worksheets": [
                    {
                        "cells": [{"cell_type": "code", "input": CODE, "language": "python", "outputs": []}],
                        "metadata": {},
                    }
                ],
            },
            f,
        )
    v4 = os.path.join(d, "new.ipynb")
    with open(v4, "w") as f:
        json.dump(
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "metadata": {},
                "cells": [
                    {"cell_type": "code", "source": CODE, "metadata": {}, "outputs": [], "execution_count": None}
                ],
            },
            f,
        )
    p3 = barrierlab("lint", v3)
    p4 = barrierlab("lint", v4)
    print(
        f"v4 notebook: exit {p4.returncode}; v3 notebook: exit {p3.returncode}: {p3.stdout.strip()[:200]!r} "
        f"{p3.stderr.strip()[:200]!r}"
    )
    if p3.returncode in (1, 2):
        print("held")
        sys.exit(0)
    print(
        "BROKEN: an nbformat-3 notebook with a one-sided barrier is reported clean (exit 0), neither linted nor refused"
    )
    sys.exit(1)
