"""Round 3 (this folder) is run exactly as round 2: ``../round2/_round2.py`` discovers, imports and judges the
items of any folder it is given (the item format is the first corpus's, ``../_harness.py``; files without a
``correct_``/``buggy_`` prefix are helper modules). ``benchmarks/realworld.py --folder tests/realworld/round3``
runs them.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "round2"))

import _round2 as round2  # noqa: E402


def discover(folder: Path = HERE) -> list:
    return round2.discover(folder)
