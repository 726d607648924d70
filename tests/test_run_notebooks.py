"""scripts/run_notebooks.py: a relative PYTHONPATH entry is made absolute before kernels start in the notebooks'
folder (session 34: ``PYTHONPATH=src`` from a worktree regenerated a notebook with the installed package's code)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
run_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebooks)


def test_relative_entries_become_absolute_from_the_current_folder(tmp_path):
    value = os.pathsep.join(["src", "/opt/lib", "", "../other"])
    got = run_notebooks.absolute_pythonpath(value, tmp_path).split(os.pathsep)
    assert got == [str((tmp_path / "src").resolve()), "/opt/lib", "", str((tmp_path / ".." / "other").resolve())]
